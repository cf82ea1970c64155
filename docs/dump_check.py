#!/usr/bin/env python3
"""Recompute a dcp-check dump's combine in float64 with NumPy and compare.

    dcp-check replay <token> --dump DIR      # writes DIR/manifest.json and .npy files
    python3 docs/dump_check.py DIR            # exit 0: NumPy agrees with dcp-check

For every rank and call in DIR/manifest.json it loads the group's inputs
(each source rank's partial_output and partial_lse, and seq_lens /
query_start_loc when the case masks empty KV shards), recomputes this rank's
heads of the LSE-weighted combine in float64 (docs/SPEC.md section 1):

    l_s = lse_s in base 2 (base e times log2(e)); NaN, +inf and masked -> -inf
    m   = max_s l_s;   all -inf -> the row is exactly zero
    w_s = 2^(l_s - m) / sum_j 2^(l_j - m);   out = sum_{w_s > 0} w_s x_s

and checks (1) that it agrees with dcp-check's dumped float64 reference
within dcp-check's own per-element tolerance (the dumped tolerance array),
and (2) that judging the kernel's output against it gives the same mismatch
mask dcp-check dumped; the same for the combined LSE when the kernel emits it
(m + log2 sum_s 2^(l_s - m), back in the inputs' base; -inf for an all-masked
row, which must be met exactly). bfloat16 is stored as raw bits; see to_float64().
"""
import json
import math
import pathlib
import sys

import numpy as np


def to_float64(array, dtype):
    """A dumped tensor as float64; bfloat16 arrives as its raw uint16 bits."""
    if dtype == "bfloat16":
        return (array.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return array.astype(np.float64)


def load(directory, tensor):
    return to_float64(np.load(directory / tensor["file"]), tensor["dtype"])


def combine(manifest, directory, by_key, rank, op):
    """This rank's [T, H, D] heads of the combine and their [T, H] combined LSE
    (in the inputs' base; -inf where every source is masked), float64, from
    its group's inputs."""
    w_count, h, d = manifest["dcp_size"], manifest["heads_per_rank"], manifest["head_dim"]
    me = next(r for r in manifest["ranks"] if r["rank"] == rank)
    heads = slice(me["group_rank"] * h, (me["group_rank"] + 1) * h)
    lse2, values = [], []
    for src in me["members"]:  # group rank order
        po = by_key[(src, op, "partial_output")]
        pl = by_key[(src, op, "partial_lse")]
        t = po["shape"][0]
        x = load(directory, po)[:, : w_count * h * d].reshape(t, w_count * h, d)[:, heads, :]
        lse = load(directory, pl)[:, : w_count * h][:, heads]
        if manifest["lse_base"] == "e":
            lse = lse * math.log2(math.e)
        lse = np.where(np.isnan(lse) | (lse == np.inf), -np.inf, lse)
        if (src, op, "seq_lens") in by_key:
            seq_lens = np.load(directory / by_key[(src, op, "seq_lens")]["file"])
            qsl = np.load(directory / by_key[(src, op, "query_start_loc")]["file"])
            seq_of_token = np.searchsorted(qsl, np.arange(t), side="right") - 1
            lse = np.where((seq_lens[seq_of_token] == 0)[:, None], -np.inf, lse)
        lse2.append(lse)
        values.append(x)
    lse2 = np.stack(lse2)  # [W, T, H]
    m = lse2.max(axis=0)
    all_masked = m == -np.inf
    m_safe = np.where(all_masked, 0.0, m)
    weight = np.exp2(lse2 - m_safe)  # exp2(-inf) == 0: such sources are never read
    weight = weight / np.where(all_masked, 1.0, weight.sum(axis=0))
    out = np.zeros_like(values[0])
    for s, x in enumerate(values):
        used = weight[s] > 0
        out += np.where(used[..., None], weight[s][..., None] * np.where(used[..., None], x, 0.0), 0.0)
    lse_out = m_safe + np.log2(np.exp2(lse2 - m_safe).sum(axis=0))
    if manifest["lse_base"] == "e":
        lse_out = lse_out * math.log(2)
    return np.where(all_masked[..., None], 0.0, out), np.where(all_masked, -np.inf, lse_out)


def main(argv):
    if len(argv) != 2:
        print("usage: dump_check.py DIR (a dcp-check replay --dump directory)", file=sys.stderr)
        return 2
    directory = pathlib.Path(argv[1])
    manifest = json.loads((directory / "manifest.json").read_text())
    if manifest["missing_ranks"]:
        print(f"dump_check: ranks {manifest['missing_ranks']} wrote nothing (they died)")
    by_key = {}
    for r in manifest["ranks"]:
        for t in r["tensors"]:
            by_key[(t["rank"], t["op"], t["name"])] = t
    problems = 0
    calls = 0
    for r in manifest["ranks"]:
        rank = r["rank"]
        for op in sorted({t["op"] for t in r["tensors"]}):
            mine, mine_lse = combine(manifest, directory, by_key, rank, op)
            want = load(directory, by_key[(rank, op, "reference")])
            tol = load(directory, by_key[(rank, op, "tolerance")])
            got = load(directory, by_key[(rank, op, "output")])
            dumped_bad = np.load(directory / by_key[(rank, op, "mismatch")]["file"])
            diff = np.abs(mine - want)
            off = ~(diff <= tol)
            bad = np.isnan(got) | ~(np.abs(got - mine) <= tol)
            calls += 1
            print(f"rank {rank} op {op}: {mine.size} elements, max |numpy - dcp-check reference| "
                  f"= {diff.max():.3g} (smallest nonzero tolerance "
                  f"{tol[tol > 0].min() if (tol > 0).any() else 0:.3g}), mismatches: numpy "
                  f"{int(bad.sum())}, dcp-check {int(dumped_bad.sum())}")
            if off.any():
                problems += 1
                i = tuple(int(v) for v in np.argwhere(off)[0])
                print(f"  DISAGREE: {int(off.sum())} reference elements beyond tolerance, first "
                      f"[token, head, dim] = {list(i)}: numpy {mine[i]!r}, dcp-check {want[i]!r}, "
                      f"tolerance {tol[i]!r}")
            if not np.array_equal(bad, dumped_bad):
                problems += 1
                print(f"  DISAGREE: the mismatch masks differ in {int((bad != dumped_bad).sum())} "
                      "elements")
            if (rank, op, "combined_lse") in by_key:  # the kernel emits its combined LSE
                want_lse = load(directory, by_key[(rank, op, "reference_lse")])
                tol_lse = load(directory, by_key[(rank, op, "tolerance_lse")])
                got_lse = load(directory, by_key[(rank, op, "combined_lse")])
                dumped_lse_bad = np.load(directory / by_key[(rank, op, "mismatch_lse")]["file"])
                masked = mine_lse == -np.inf  # every source masked: exactly -inf
                lse_off = np.where(masked, want_lse != -np.inf,
                                   ~(np.abs(np.where(masked, 0, mine_lse - want_lse)) <= tol_lse))
                lse_bad = np.where(masked, ~(got_lse == -np.inf),
                                   ~(np.abs(np.where(masked, 0, got_lse - mine_lse)) <= tol_lse))
                print(f"  combined LSE: {mine_lse.size} rows, mismatches: numpy "
                      f"{int(lse_bad.sum())}, dcp-check {int(dumped_lse_bad.sum())}")
                if lse_off.any():
                    problems += 1
                    print(f"  DISAGREE: {int(lse_off.sum())} combined-LSE reference rows beyond "
                          "tolerance")
                if not np.array_equal(lse_bad, dumped_lse_bad):
                    problems += 1
                    print("  DISAGREE: the combined-LSE mismatch masks differ in "
                          f"{int((lse_bad != dumped_lse_bad).sum())} rows")
    if calls == 0:
        print("dump_check: the manifest lists no call")
        return 1
    verdict = "OK" if problems == 0 else "FAILED"
    print(f"dump_check: {verdict}: {calls} calls of case {manifest['case_id']} "
          f"({manifest['status']}): NumPy's float64 combine "
          f"{'agrees' if problems == 0 else 'disagrees'} with dcp-check's reference")
    return 0 if problems == 0 else 1


if __name__ == "__main__":
    with np.errstate(divide="ignore", invalid="ignore"):  # -inf rows are handled explicitly
        sys.exit(main(sys.argv))
