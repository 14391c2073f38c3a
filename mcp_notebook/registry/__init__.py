"""Tools, resources and prompts registered from notebook cells."""

from .components import Prompt, Resource, ResourceTemplate, Tool
from .registry import Kind, Registry, RegistryState
from .signature import ArgumentError

__all__ = [
    "ArgumentError",
    "Kind",
    "Prompt",
    "Registry",
    "RegistryState",
    "Resource",
    "ResourceTemplate",
    "Tool",
]
