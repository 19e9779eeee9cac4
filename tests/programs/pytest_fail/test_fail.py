# One failing and one passing test.
def test_fails():
    assert 1 == 2


def test_passes():
    pass
