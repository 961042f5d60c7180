"""The base of every stack config model (gpu_queues/config/model.py, monitoring.py)."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel
from pydantic.config import ExtraValues


class Model(BaseModel):
    """Base for every config model: unknown keys are errors, immutable, and one naming per
    form. A mapping (a stack file's keys, `model_validate`) is read by its camelCase keys
    only, as Pulumi.<stack>.yaml and the JSON schema spell them; a model built in code takes
    the field names (`Team(cluster_queue=...)`), which are what type checkers see in the
    constructor's signature, so code that type-checks also runs."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        frozen=True,
        validate_by_name=True,
        validate_by_alias=True,
    )

    @classmethod
    def model_validate(
        cls,
        obj: Any,
        *,
        strict: bool | None = None,
        extra: ExtraValues | None = None,
        from_attributes: bool | None = None,
        context: Any | None = None,
        by_alias: bool | None = None,
        by_name: bool | None = None,
    ) -> Self:
        """A mapping of stack config keys: camelCase only (a snake_case key in a stack file is
        an unknown key, as the checks across keys, which read the raw camelCase keys, would
        never see it)."""
        return super().model_validate(
            obj,
            strict=strict,
            extra=extra,
            from_attributes=from_attributes,
            context=context,
            by_alias=True if by_alias is None else by_alias,
            by_name=False if by_name is None else by_name,
        )
