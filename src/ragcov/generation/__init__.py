"""Coverage-guided test generation (docs/method.md §5): questions aimed at uncovered chunks."""

from ragcov.generation.base import Generation, GenerationError
from ragcov.generation.extractive import ExtractiveGenerator
from ragcov.generation.generators import make_generator
from ragcov.generation.llamacpp import LlamaCppGenerator, default_gguf
from ragcov.generation.loop import GenerationSummary, LoopConfig, run_generation
from ragcov.generation.openai_compat import OpenAIGenerator
from ragcov.generation.targets import POLICIES, TARGET_STRATEGIES, TargetPicker

__all__ = [
    "POLICIES", "TARGET_STRATEGIES", "ExtractiveGenerator", "Generation", "GenerationError",
    "GenerationSummary", "LlamaCppGenerator", "LoopConfig", "OpenAIGenerator", "TargetPicker",
    "default_gguf", "make_generator", "run_generation",
]
