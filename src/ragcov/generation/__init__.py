"""Coverage-guided test generation (docs/method.md §5): questions aimed at uncovered chunks."""

from ragcov.generation.generators import (
    ExtractiveGenerator,
    Generation,
    GenerationError,
    LlamaCppGenerator,
    OpenAIGenerator,
    default_gguf,
    make_generator,
)
from ragcov.generation.loop import GenerationSummary, LoopConfig, run_generation
from ragcov.generation.targets import POLICIES, TARGET_STRATEGIES, TargetPicker

__all__ = [
    "POLICIES", "TARGET_STRATEGIES", "ExtractiveGenerator", "Generation", "GenerationError",
    "GenerationSummary", "LlamaCppGenerator", "LoopConfig", "OpenAIGenerator", "TargetPicker",
    "default_gguf", "make_generator", "run_generation",
]
