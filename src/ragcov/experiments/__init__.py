"""Dataset loaders and the runners that reproduce the paper's research questions."""
