"""From hits to an answer: context, prompts, generation, verification, the ask() pipeline."""
