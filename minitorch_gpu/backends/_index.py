"""Indexing primitives: basic and advanced getitem/setitem, gather/scatter, sort and friends."""


class IndexMixin:
    def getitem(self, x, index):
        return x[index]

    def setitem(self, x, index, value):
        x[index] = value
