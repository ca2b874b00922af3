"""BLURB loaders: tiny fixture files (format rules, error messages) and the real data root (exact counts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from medibio.core.errors import DataMissingError, InputFormatError
from medibio.tasks import formats, loaders, registry
from medibio.tasks.blurb import BIO_TAGS, HOC_HALLMARKS, PICO_TAGS

FIXTURE_ROOT = Path(__file__).parent / "fixtures" / "blurb" / "root"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- parsers on fixture files


def test_conll_sentences_ids_and_tags() -> None:
    rows = formats.read_conll(FIXTURE_ROOT / "blurb/BC5CDR-chem/train.tsv", BIO_TAGS)
    assert [r["id"] for r in rows] == ["0", "1"]
    assert rows[0]["tokens"] == ["Aspirin", "and", "sodium", "chloride", "."]
    assert rows[0]["tags"] == ["B", "O", "B", "I", "O"]


def test_docstart_ids_stay_unique_when_a_document_recurs() -> None:
    rows = formats.read_conll(FIXTURE_ROOT / "blurb/JNLPBA/train.tsv", BIO_TAGS)
    assert [r["id"] for r in rows] == ["111-0", "111-1", "222-0", "111-2"]
    assert all("-DOCSTART-" not in tok for r in rows for tok in r["tokens"])


def test_pico_io_tags_need_no_b() -> None:
    rows = formats.read_conll(FIXTURE_ROOT / "blurb/ebmnlp/dev.tsv", PICO_TAGS, bio=False)
    assert [r["id"] for r in rows] == ["900-0", "900-1"]
    assert rows[0]["tags"] == ["I-INT", "O", "I-PAR", "I-PAR", "I-PAR", "O"]


@pytest.mark.parametrize(
    ("content", "line", "fragment"),
    [
        ("a\tO\nb\tB\textra\n", 2, "2 tab-separated columns"),
        ("a\tO\n\nb\tB-Chemical\n", 3, "a label in"),
        ("a\tO\nb\tI\n", 2, "'I' only after 'B' or 'I'"),
        ("x\tB\n\nb\tI\n", 3, "'I' only after 'B' or 'I'"),
        ("a O\n", 1, "2 tab-separated columns"),
    ],
    ids=["extra-column", "unknown-tag", "dangling-I-after-O", "dangling-I-at-sentence-start", "space-not-tab"],
)
def test_conll_errors_name_file_and_line(tmp_path: Path, content: str, line: int, fragment: str) -> None:
    path = _write(tmp_path, "bad_ner.tsv", content)
    with pytest.raises(InputFormatError) as info:
        formats.read_conll(path, BIO_TAGS)
    assert info.value.line == line
    assert f"bad_ner.tsv:{line}" in str(info.value)
    assert fragment in str(info.value)


def test_pico_rejects_bio_tags(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad_pico.tsv", "-DOCSTART- (1)\n\nAspirin\tB-INT\n")
    with pytest.raises(InputFormatError, match=r"bad_pico.tsv:3: expected a label in"):
        formats.read_conll(path, PICO_TAGS, bio=False)


def test_hoc_joins_sentences_in_order_and_ors_labels() -> None:
    rows = formats.read_hoc_tsv(FIXTURE_ROOT / "blurb/HoC/train.tsv", HOC_HALLMARKS)
    assert [r["id"] for r in rows] == ["100", "200", "300"]
    assert rows[0]["text"] == "We study cells . Cells grow ."
    assert rows[0]["label"] == ["Sustaining proliferative signaling"]
    assert rows[1]["label"] == ["Activating invasion and metastasis", "Tumor promoting inflammation"]
    assert rows[2]["label"] == []


@pytest.mark.parametrize(
    ("row", "fragment"),
    [
        ("0_0,1_0,2_0\tShort flags .\t1_s0", "10 comma-separated flags"),
        ("0_0,1_0,2_0,3_0,4_0,5_0,6_0,7_0,8_0,9_2\tBad flag .\t1_s0", "10 comma-separated flags"),
        ("0_0,1_0,2_0,3_0,4_0,5_0,6_0,7_0,8_0,9_0\tNo index .\t12345", "PMID_sN"),
    ],
)
def test_hoc_errors(tmp_path: Path, row: str, fragment: str) -> None:
    path = _write(tmp_path, "hoc.tsv", "labels\tsentence\tindex\n" + row + "\n")
    with pytest.raises(InputFormatError, match=r"hoc.tsv:2: ") as info:
        formats.read_hoc_tsv(path, HOC_HALLMARKS)
    assert fragment in str(info.value)


def test_hoc_rejects_repeated_sentence(tmp_path: Path) -> None:
    flags = ",".join(f"{k}_0" for k in range(10))
    path = _write(tmp_path, "hoc.tsv", f"labels\tsentence\tindex\n{flags}\tA .\t1_s0\n{flags}\tB .\t1_s0\n")
    with pytest.raises(InputFormatError, match=r"hoc.tsv:3: expected each sentence index once"):
        formats.read_hoc_tsv(path, HOC_HALLMARKS)


def test_re_tsv_unknown_label_and_wrong_header(tmp_path: Path) -> None:
    bad = _write(tmp_path, "chemprot.tsv", "1\t@CHEMICAL$ x @GENE$\tCPR:4\n2\t@CHEMICAL$ y @GENE$\tCPR:10\n")
    with pytest.raises(InputFormatError, match=r"chemprot.tsv:2: expected a label in .*got 'CPR:10'"):
        formats.read_re_tsv(bad, registry.get("ChemProt").labels)
    gad = _write(tmp_path, "gad.tsv", "id\tsentence\tlabel\n0\tx\t1\n")
    with pytest.raises(InputFormatError, match=r"gad.tsv:1: expected header"):
        formats.read_re_tsv(gad, ("0", "1"), header=("index", "sentence", "label"))


def test_biosses_score_must_be_numeric(tmp_path: Path) -> None:
    path = _write(tmp_path, "biosses.tsv", "pair_id\tsent1\tsent2\tscore\n1\ta\tb\thigh\n")
    with pytest.raises(InputFormatError, match=r"biosses.tsv:2: expected a finite numeric score"):
        formats.read_biosses_tsv(path)


def test_pubmedqa_id_absent_from_json(tmp_path: Path) -> None:
    ids = _write(tmp_path, "train_pmid.tsv", "11\n99\n")
    with pytest.raises(InputFormatError, match=r"train_pmid.tsv:2: expected a PMID present in ori_pqal.json"):
        formats.read_pubmedqa(FIXTURE_ROOT / "blurb/pubmedqa/ori_pqal.json", ids, ("yes", "no", "maybe"))


# ---------------------------------------------------------------- loader API on the fixture data root


def test_load_blurb_token_columns_and_types() -> None:
    dd = loaders.load_blurb("BC5-chem", data_root=FIXTURE_ROOT)
    assert list(dd) == ["train", "dev", "test"]
    assert dd["train"].column_names == ["id", "tokens", "tags"]
    assert dd["train"].features["tags"].feature.dtype == "string"
    assert dd["test"][0] == {"id": "0", "tokens": ["Heparin", "sodium", "."], "tags": ["B", "I", "O"]}


def test_load_blurb_classify_multilabel_regression_and_qa() -> None:
    chem = loaders.load_split("ChemProt", "train", data_root=FIXTURE_ROOT)
    assert chem[0] == {"id": "1.T1.T2", "text": "@CHEMICAL$ inhibits @GENE$ .", "text_pair": "", "label": "CPR:4"}
    gad = loaders.load_split("GAD", "train", data_root=FIXTURE_ROOT)
    assert gad["label"] == ["1", "0"] and gad["id"] == ["0", "1"]
    bio = loaders.load_split("BIOSSES", "train", data_root=FIXTURE_ROOT)
    assert bio.features["label"].dtype == "float64" and bio[0]["label"] == pytest.approx(3.8)
    hoc = loaders.load_split("HoC", "train", data_root=FIXTURE_ROOT)
    assert hoc["label"][2] == [] and hoc["text_pair"] == ["", "", ""]
    qa = loaders.load_split("PubMedQA", "train", data_root=FIXTURE_ROOT)
    assert qa["id"] == ["22", "11"]
    assert qa[1] == {"id": "11", "text": "Does X help?", "text_pair": "We tested X. X helped.", "label": "yes"}
    asq = loaders.load_split("BioASQ", "train", data_root=FIXTURE_ROOT)
    assert asq[0]["text"] == "Is aspirin an NSAID?" and asq[0]["label"] == "yes"


def test_ebm_pico_has_no_train_split_in_fixture_root() -> None:
    assert loaders.available_splits("EBM-PICO", data_root=FIXTURE_ROOT) == ["dev", "test"]
    dd = loaders.load_blurb("EBM PICO", data_root=FIXTURE_ROOT)
    assert list(dd) == ["dev", "test"]
    with pytest.raises(DataMissingError) as info:
        loaders.load_blurb("EBM-PICO", data_root=FIXTURE_ROOT, splits=["train"])
    assert "ebmnlp/train.tsv" in str(info.value) and "EBM-NLP" in str(info.value)


def test_missing_file_names_file_and_source(tmp_path: Path) -> None:
    (tmp_path / "blurb" / "chemprot").mkdir(parents=True)
    with pytest.raises(DataMissingError) as info:
        loaders.load_blurb("ChemProt", data_root=tmp_path)
    assert "chemprot/train.tsv" in str(info.value)
    assert registry.get("ChemProt").source in str(info.value)
    with pytest.raises(DataMissingError, match="GAD"):
        loaders.load_blurb("GAD", data_root=tmp_path)


def test_unknown_split_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown split 'validation'"):
        loaders.load_split("GAD", "validation", data_root=FIXTURE_ROOT)


# ---------------------------------------------------------------- the real data root

# dataset -> split sizes in examples (NER/PICO: sentences) as the data root holds them
REAL_SIZES = {
    "BC5-chem": (4560, 4581, 4797), "BC5-disease": (4560, 4581, 4797), "NCBI-disease": (5424, 923, 940),
    "BC2GM": (12574, 2519, 5038), "JNLPBA": (16807, 1739, 3856), "EBM-PICO": (None, 10386, 2076),
    "ChemProt": (18035, 11268, 15745), "DDI": (25296, 2496, 5716), "GAD": (4261, 535, 534),
    "BIOSSES": (64, 16, 20), "HoC": (1295, 186, 371), "PubMedQA": (450, 50, 500), "BioASQ": (670, 75, 140),
}


@pytest.mark.parametrize("name", list(REAL_SIZES))
def test_real_dataset_sizes_columns_and_labels(data_root: Path, name: str) -> None:
    spec = registry.get(name)
    dd = loaders.load_blurb(name, data_root=data_root)
    expected = {s: n for s, n in zip(loaders.SPLITS, REAL_SIZES[name], strict=True) if n is not None}
    assert {s: len(ds) for s, ds in dd.items()} == expected
    for ds in dd.values():
        assert len(set(ds["id"])) == len(ds)
        if spec.is_token_task:
            assert ds.column_names == ["id", "tokens", "tags"]
            assert {t for tags in ds["tags"] for t in tags} <= set(spec.labels)
        else:
            assert ds.column_names == ["id", "text", "text_pair", "label"]
            assert all(ds["text"]) and (all(ds["text_pair"]) if spec.text_pair else not any(ds["text_pair"]))


def test_real_entity_and_pico_counts(data_root: Path) -> None:
    chem = loaders.load_split("BC5-chem", "train", data_root=data_root)
    assert sum(t == "B" for tags in chem["tags"] for t in tags) == 5203
    pico = loaders.load_split("EBM-PICO", "dev", data_root=data_root)
    assert sum(t != "O" for tags in pico["tags"] for t in tags) == 87308
    assert pico[0]["id"] == "10037531-0"
    jnlpba = loaders.load_split("JNLPBA", "test", data_root=data_root)
    assert sum(t == "B" for tags in jnlpba["tags"] for t in tags) == 8662


def test_real_ebm_pico_train_absent(data_root: Path) -> None:
    assert loaders.available_splits("EBM-PICO", data_root=data_root) == ["dev", "test"]
    with pytest.raises(DataMissingError, match="EBM-NLP"):
        loaders.load_split("EBM-PICO", "train", data_root=data_root)


def test_real_hoc_abstract_labels(data_root: Path) -> None:
    hoc = loaders.load_blurb("HoC", data_root=data_root)
    assert {s: len(ds) for s, ds in hoc.items()} == {"train": 1295, "dev": 186, "test": 371}
    ghrelin = hoc["train"].filter(lambda r: r["id"] == "11724768")[0]
    assert ghrelin["label"] == ["Sustaining proliferative signaling"]
    assert ghrelin["text"].startswith("Ghrelin was identified in the stomach")
    labels = {lab for ds in hoc.values() for labs in ds["label"] for lab in labs}
    assert labels == set(HOC_HALLMARKS)


def test_real_label_sets(data_root: Path) -> None:
    qa = loaders.load_blurb("PubMedQA", data_root=data_root)
    assert set(qa["test"]["label"]) == {"yes", "no", "maybe"}
    assert qa["test"][0]["id"] == "12377809"
    assert set(loaders.load_split("DDI", "test", data_root=data_root)["label"]) == set(registry.get("DDI").labels)
    biosses = loaders.load_split("BIOSSES", "test", data_root=data_root)
    assert all(0.0 <= s <= 4.0 for s in biosses["label"])
