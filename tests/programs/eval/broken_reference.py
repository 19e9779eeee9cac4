"""A reference that cannot even be set up: the problem's fault, not a candidate's."""


class Model:
    def __init__(self, *args):
        raise RuntimeError("the reference is broken")


def get_inputs():
    return []


def get_init_inputs():
    return []
