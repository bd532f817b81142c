"""rankstudy.util.yamlfile reads the project's YAML as yaml.safe_load does, with libyaml's parser."""

from pathlib import Path

import pytest
import yaml

from rankstudy.util import yamlfile

REPO = Path(__file__).resolve().parents[1]
FILES = sorted([REPO / "workflow" / "schemas" / "config.schema.yaml", *(REPO / "config").rglob("*.yaml")])


def test_libyaml_parses_here():
    # PyPI's PyYAML wheels carry libyaml; without it every snakemake start parses in pure Python again
    assert yamlfile.SafeLoader is yaml.CSafeLoader


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_shipped_yaml_file_reads_as_safe_load_reads_it(path):
    text = path.read_text()
    assert yamlfile.safe_load(text) == yaml.safe_load(text)


@pytest.mark.parametrize("text", ["a: 1.0e300\nb: .inf\nc: 0o17\nd: 2026-12-07\ne: yes\nf: ~\ng: [1, '2']\n",
                                  "&x {k: 1}\n", "- !!str 3\n- 010\n- 0x1F\n"])
def test_scalars_and_anchors_read_as_safe_load_reads_them(text):
    assert yamlfile.safe_load(text) == yaml.safe_load(text)


def test_a_malformed_file_is_a_yaml_error_with_its_line():
    with pytest.raises(yaml.YAMLError) as caught:
        yamlfile.safe_load("a: 1\nb: [2\nc: 3\n")
    assert caught.value.problem_mark.line >= 1
