"""The BLURB paper's Table 6 as data: complete, and its printed BLURB scores follow from its cells."""

from __future__ import annotations

import pytest

from medibio.core.errors import InputFormatError
from medibio.paper import blurb_paper as reference
from medibio.tasks import registry, scoring


def test_nine_encoders_times_thirteen_datasets():
    assert reference.models()[0] == reference.GENERAL_DOMAIN and reference.IN_DOMAIN in reference.models()
    assert len(reference.models()) == 9
    for model in reference.models():
        assert set(reference.scores(model)) == set(registry.names())
    assert reference.scores(reference.GENERAL_DOMAIN)["PubMedQA"] == 51.62
    assert reference.scores(reference.IN_DOMAIN)["BioASQ"] == 87.56


@pytest.mark.parametrize("model", reference.models())
def test_our_blurb_score_reproduces_the_printed_one(model):
    ours = scoring.blurb_score(reference.scores(model)).value
    assert ours == pytest.approx(reference.printed_blurb_score(model), abs=0.006)


def test_bad_cells_name_file_and_line(tmp_path):
    bad = tmp_path / "t.csv"
    bad.write_text("model,dataset,value\nBERT,BC5-chem,89.25\nBERT,Made-up,1\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"t\.csv:3: expected a BLURB dataset"):
        reference.scores("BERT", bad)
    bad.write_text("model,dataset,value\nBERT,BC5-chem,n/a\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"t\.csv:2: expected a number"):
        reference.scores("BERT", bad)
    with pytest.raises(KeyError, match="known"):
        reference.scores("GPT")
