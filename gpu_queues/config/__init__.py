"""The stack config: the pydantic model and its errors, the checks across values (Kueue's
rules on the rendered objects, MultiKueue, worker stacks), node shapes, the config rendered
as Kueue objects, the JSON schema, and reading and editing stack files (secure values kept)."""
