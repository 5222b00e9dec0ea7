"""Linear-algebra primitives: matmul (with batch broadcasting) and einsum."""


class LinalgMixin:
    def matmul(self, a, b):
        return self.xp.matmul(a, b)
