from collections.abc import Iterator

import pytest

from tests.operator.fake_api import FakeApi, fake_api


@pytest.fixture
def api() -> Iterator[FakeApi]:
    yield from fake_api()
