"""``nesybench export``: a data set as Hugging Face ``datasets``, Parquet or Croissant."""
from __future__ import annotations

import click

from nesybench.io import dumps


@click.command("export")
@click.argument("dataset")
@click.option("--format", "fmt", type=click.Choice(["hf", "parquet", "croissant"]),
              default="croissant", show_default=True,
              help="hf: DatasetDict.save_to_disk; parquet: data/<split>-*.parquet; croissant: "
                   "the Parquet files plus croissant.json")
@click.option("-o", "--out", type=click.Path(file_okay=False), required=True,
              help="output folder (written whole or not at all)")
@click.option("--split", default=None, help="export one split only (default: all)")
@click.option("--seed", type=int, default=None,
              help="generation seed when DATASET is a curriculum/task YAML or a built-in name")
@click.option("--overwrite", is_flag=True, help="replace an existing output folder")
@click.option("--no-verify", is_flag=True,
              help="do not check the data set's files against the SHA-256 its manifest lists "
                   "(the exported sha256 column is then computed from the bytes exported)")
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
@click.option("-q", "--quiet", is_flag=True, help="no progress bars")
def group(dataset, fmt, out, split, seed, overwrite, no_verify, as_json, quiet):
    """Export DATASET for the Hugging Face Hub and Croissant readers, with a dataset card.

    DATASET is a generated folder (kandy generate, rs generate, rudas generate), a
    curriculum or task YAML, a CSV/ARFF table, or a built-in name (kandy-easy, kandy-hard,
    rs-xor, irt-letter, ski-bcw, ...: generated into the cache folder on first use).
    """
    from nesybench.data import load  # noqa: PLC0415
    from nesybench.data.export import export  # noqa: PLC0415

    progress = not (quiet or as_json)
    data = load(dataset, split, seed=seed, progress=progress, verify=not no_verify)
    res = export(data, out, fmt, overwrite=overwrite, progress=progress)
    if as_json:
        click.echo(dumps(res), nl=False)
    else:
        sizes = ", ".join(f"{s} {n}" for s, n in res["splits"].items())
        click.echo(f"wrote {out} ({fmt}): {sizes}; {res['bytes'] / 1e6:.2f} MB in "
                   f"{res['seconds']:.1f} s")
