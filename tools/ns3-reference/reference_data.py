"""Shared by run_incast.py and run_fabric.py: where the recorded reference data come from."""
import json


def write(path, rows, script):
    """Writes the rows of one comparison with the provenance of the reference figures."""
    with open(path, "w") as f:
        json.dump({"source": "ns-3-alibabacloud (HPCC SIGCOMM'19 RDMA model, ns-3.36) driven by "
                   f"tools/ns3-reference/ct-ref.cc; regenerate with tools/ns3-reference/{script}",
                   "rows": rows}, f, indent=1)


def arguments(doc):
    """--ct-ref (the reference binary) and --out (where to record the comparison)."""
    import argparse

    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--ct-ref", required=True, help="ns3.36.1-ct-ref-optimized built as README.md says")
    ap.add_argument("--out", help="JSON file to record both simulators' figures in")
    return ap.parse_args()
