"""Does not compile."""

class ModelNew(
    def __call__(self, x):
        return x
