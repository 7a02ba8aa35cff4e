import models
def test_x():
    print(models.__file__)
    assert hasattr(models, "gaussian_mixture")
