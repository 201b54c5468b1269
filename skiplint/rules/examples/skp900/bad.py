from torchgpipe.skip import skippable

@skippable(stash=["skip"]  # expect: SKP900
class Layer:
    pass
