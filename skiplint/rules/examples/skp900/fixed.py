from torchgpipe.skip import skippable

@skippable(stash=["skip"])
class Layer:
    pass
