"""The base of every stack config model (gpu_queues/config/model.py, monitoring.py)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Model(BaseModel):
    """Base for every config model: camelCase keys, unknown keys are errors, immutable."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, frozen=True)
