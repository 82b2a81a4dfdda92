"""`make bench` runs every bench through bench/all.py, which collects each one's headline.

These check the runner's own logic (headlines read back, the README's table spliced in,
a failed bench named) and that no bench is left out of it; the benches' speed is never
asserted here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench import all as bench_all
from bench.headline import Headline, headline, parse

BENCH = Path(__file__).resolve().parents[2] / "bench"

texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)


@given(
    st.builds(
        Headline,
        texts,
        texts,
        texts,
        texts,
        st.none() | st.floats(allow_nan=False, allow_infinity=False),
        texts,
        st.none() | st.booleans(),
    )
)
def test_a_printed_headline_reads_back_the_same(line: Headline) -> None:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        headline(
            line.bench, line.measure, line.figure, line.baseline, line.ratio, line.goal, line.met
        )
    printed = out.getvalue()
    assert printed.count("\n") == 1
    assert parse(printed.rstrip("\n")) == line


def test_other_lines_are_not_headlines_and_a_broken_one_is_an_error() -> None:
    assert parse("linear: yes (100 KB rate / 10 MB rate = 1.2)") is None
    with pytest.raises(ValueError, match="broken headline"):
        parse('headline {"bench": "x"')
    with pytest.raises(ValueError, match="broken headline"):
        parse('headline {"bench": "x", "nonsense": 1}')


def test_the_table_names_a_failed_bench_beside_the_others_figures() -> None:
    good = bench_all.Outcome("harvest", seconds=3.0)
    good.headlines.append(Headline("harvest", "read 10 MB", "5 MB/s", "4 MB/s", 1.25, "", None))
    bad = bench_all.Outcome("fleet", code=1, seconds=2.0, trouble="exited 1")
    text = bench_all.table([good, bad], quick=True)
    assert "| `harvest.py` | read 10 MB | 5 MB/s | 4 MB/s | 1.25x |  |  |" in text
    assert "| `fleet.py` | **failed: exited 1** |" in text
    assert "harvest 3 s, fleet 2 s" in text


def test_the_readme_table_is_replaced_between_its_markers_only(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# Benchmarks\nbefore\n{bench_all.BEGIN}\nold\n{bench_all.END}\nafter\n")
    bench_all.write_readme(readme, "new table")
    text = readme.read_text()
    assert text.startswith("# Benchmarks\nbefore\n")
    assert text.endswith(f"{bench_all.END}\nafter\n")
    assert "new table" in text and "old" not in text


def test_a_readme_without_the_markers_is_refused_untouched(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Benchmarks\n")
    with pytest.raises(ValueError, match="lacks the markers"):
        bench_all.write_readme(readme, "table")
    assert readme.read_text() == "# Benchmarks\n"


def _is_script(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(
        isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) for node in tree.body
    )


def test_every_bench_runs_in_make_bench_and_prints_a_headline() -> None:
    scripts = {p.stem for p in BENCH.glob("*.py") if _is_script(p)} - {"all"}
    assert scripts == set(bench_all.BENCHES)
    for name in bench_all.BENCHES:
        assert "headline(" in (BENCH / f"{name}.py").read_text(encoding="utf-8"), name
    makefile = (BENCH.parent / "Makefile").read_text(encoding="utf-8")
    assert "bench/all.py" in makefile


def test_the_readme_holds_the_markers_the_runner_writes_between() -> None:
    text = (BENCH / "README.md").read_text(encoding="utf-8")
    assert text.index(bench_all.BEGIN) < text.index(bench_all.END)
