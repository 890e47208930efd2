"""Serving a language model through the CLI (`--task serve`): the serving object, the
issue's known answers, models from a folder and the Hub cache, this machine's bench.

No network: Hub ids are read from a cache the test makes, with HF_HUB_OFFLINE set.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.models.bench import BenchReport, BenchResult

from .conftest import LLAMA3_8B, write_config

Cli = Callable[..., Any]
SERVING_FIELDS = {
    "prefill_tokens_per_s",
    "decode_tokens_per_s",
    "aggregate_tokens_per_s",
    "ttft_s",
    "kv_cache_bytes_per_token",
    "max_concurrency",
    "requests_per_s",
    "engine",
    "quant",
    "tp",
}


def _estimate(cli: Cli, *args: str) -> dict[str, Any]:
    code, out, err = cli("estimate", *args, "--no-bench", "--json")
    assert code == 0, err
    return json.loads(out)


def _one(doc: dict[str, Any]) -> dict[str, Any]:
    (est,) = doc["estimates"]
    return est


def test_a_served_model_has_tokens_per_second(cli: Cli) -> None:
    doc = _estimate(cli, "--model", "llama-3-8b", "--task", "serve", "--on", "rtx-4090")
    est = _one(doc)
    serving = est["serving"]
    assert set(serving) >= SERVING_FIELDS
    assert serving["engine"] == "vllm" and serving["quant"] == "bf16" and serving["tp"] == 1
    for key in ("prefill_tokens_per_s", "decode_tokens_per_s", "aggregate_tokens_per_s"):
        assert serving[key] > 0
    # Prefill is compute-bound and runs far faster than memory-bound decode.
    assert serving["prefill_tokens_per_s"] > 20 * serving["decode_tokens_per_s"]
    assert serving["aggregate_tokens_per_s"] == pytest.approx(serving["decode_tokens_per_s"])
    # GQA: 2 x 32 layers x 8 KV heads x 128 x 2 bytes.
    assert serving["kv_cache_bytes_per_token"] == 131072
    # The step is one batch of requests; throughput is requests/s.
    assert est["throughput_samples_s"] == pytest.approx(serving["requests_per_s"])
    assert doc["workload"]["task"] == "serve" and doc["workload"]["context"] == 4096
    assert est["fits"] is True


def test_llama3_8b_at_8192_fits_24gb_with_2_sequences_not_16(cli: Cli) -> None:
    base = ["--model", "llama-3-8b", "--task", "serve", "--on", "rtx-4090"]
    base += ["--quant", "bf16", "--context", "8192"]
    two = _one(_estimate(cli, *base, "--concurrency", "2"))
    sixteen = _one(_estimate(cli, *base, "--concurrency", "16"))
    assert two["fits"] is True and sixteen["fits"] is False
    # 128 KiB per token x 8192 tokens x sequences.
    assert two["serving"]["kv_cache_bytes"] == 2 * 8192 * 131072
    assert sixteen["serving"]["kv_cache_bytes"] == 16 * 8192 * 131072
    assert 2 <= two["serving"]["max_concurrency"] < 16
    # Aggregate tokens/s grows with the batch: the weights are read once per step.
    assert (
        sixteen["serving"]["aggregate_tokens_per_s"] > 4 * two["serving"]["aggregate_tokens_per_s"]
    )
    # What does not fit gets lighter formats, fewest bits last, then more GPUs, priced.
    options = sixteen["serving"]["options"]
    assert [o["quant"] for o in options if o["tp"] == 1] == ["fp8", "awq"]
    assert options[-1]["tp"] == 2 and options[-1]["fits"] is True
    assert all(o["memory_bytes"] > 0 and o["decode_tokens_per_s"] > 0 for o in options)
    assert [f["memory_bytes"] for f in sixteen["fixes"]] == [o["memory_bytes"] for o in options]


def test_70b_fp16_needs_two_80gb_gpus_and_fits_one_in_4_bit(cli: Cli) -> None:
    base = ["--model", "llama-2-70b", "--task", "serve", "--on", "a100-80gb"]
    one = _one(_estimate(cli, *base, "--quant", "fp16"))
    two = _one(_estimate(cli, *base, "--quant", "fp16", "--gpus", "2"))
    assert one["fits"] is False and two["fits"] is True
    assert two["serving"]["tp"] == 2 and two["gpus"] == 2
    assert two["memory"]["weights_bytes"] == pytest.approx(
        one["memory"]["weights_bytes"] / 2, rel=0.01
    )
    for quant in ("awq", "q4_k_m", "nf4"):
        four_bit = _one(_estimate(cli, *base, "--quant", quant))
        assert four_bit["fits"] is True, quant
    # The fp16 estimate on one GPU suggests the 4-bit format and the second GPU, priced.
    fitting = [o for o in one["serving"]["options"] if o["fits"]]
    assert {(o["quant"], o["tp"]) for o in fitting} == {("awq", 1), ("fp16", 2)}


def test_mixtral_is_fast_as_its_active_parameters_and_holds_all(cli: Cli) -> None:
    base = ["--task", "serve", "--on", "h100-sxm", "--gpus", "2", "--quant", "fp16"]
    mixtral = _estimate(cli, "--model", "mixtral-8x7b", *base)
    dense = _estimate(cli, "--model", "llama-2-13b", *base)
    llm = mixtral["workload"]["llm"]
    assert llm["params_active"] == pytest.approx(12.9e9, rel=0.01)
    assert llm["params_total"] == pytest.approx(46.7e9, rel=0.01)
    mx, dn = _one(mixtral), _one(dense)
    # Speed of a ~13 B dense model, memory of all 46.7 B (2 bytes each, over 2 GPUs).
    ratio = mx["serving"]["decode_tokens_per_s"] / dn["serving"]["decode_tokens_per_s"]
    assert 0.75 < ratio < 1.35
    assert mx["memory"]["weights_bytes"] * 2 > 46.7e9 * 2 * 0.99
    assert any("12.9 B active" in a for a in mx["assumptions"])


def test_inference_scenario_serves_a_decoder_by_default(cli: Cli) -> None:
    doc = _estimate(cli, "--model", "llama-3-8b", "--scenario", "inference", "--on", "l4")
    assert doc["workload"]["task"] == "serve" and _one(doc)["serving"] is not None
    cnn = _estimate(cli, "--model", "resnet50", "--scenario", "inference", "--on", "l4")
    assert cnn["workload"]["task"] == "infer" and _one(cnn)["serving"] is None
    trained = _estimate(cli, "--model", "llama-3-8b", "--on", "l4")
    assert trained["workload"]["task"] == "train"


def test_serving_a_language_model_at_a_qps_is_priced_by_the_month(cli: Cli) -> None:
    """--task serve with --qps: each row is a month of enough instances for the load, an
    8-GPU instance running one replica per GPU, and the picks name the cheapest."""
    doc = _estimate(
        cli, "--model", "llama-3-8b", "--task", "serve", "--qps", "2", "--on", "h100-sxm",
        "--on", "l4",
    )  # fmt: skip
    rows = {e["device"]: e for e in doc["estimates"]}
    for row in rows.values():
        cost, rps = row["cost"], row["serving"]["requests_per_s"]
        assert cost["monthly_usd"] > 0 and cost["instances"] >= 1
        replicas = 8 if cost["instance"] == "p5.48xlarge" else 1
        assert cost["instances"] == max(1, -(-2 // (rps * replicas)))  # ceil
        assert cost["monthly_usd"] == pytest.approx(cost["hourly_usd"] * cost["instances"] * 730)
    assert doc["cheapest"] is not None and doc["cheapest"]["usd"] > 0


def test_a_served_model_is_stated_in_bf16_unless_told(cli: Cli) -> None:
    doc = _estimate(cli, "--model", "llama-3-8b", "--task", "serve", "--on", "l4")
    assert doc["workload"]["precision"] == "bf16"
    fp16 = _estimate(cli, "--model", "llama-3-8b", "--task", "serve", "--precision", "fp16")
    assert fp16["workload"]["precision"] == "fp16"


def test_recommend_reads_serving_in_tokens_and_requests(cli: Cli, data_dir: Path) -> None:
    facts = data_dir / "facts" / "laptop.json"
    code, out, err = cli(
        "recommend", "--scenario", "inference", "--model", "llama-2-70b", "--quant", "fp16",
        "--facts", str(facts), "--no-bench", "--json",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["workload"]["task"] == "serve"
    served = [a for a in doc["estimates"]["alternatives"] if a.get("serving")]
    assert served and all(a["serving"]["decode_tokens_per_s"] > 0 for a in served)
    findings = {f["rule"]: f for f in doc["findings"]}
    # No single GPU holds 70B in fp16: lighter formats, then tensor parallel, priced.
    assert "HW153" in findings and "tokens/s" in findings["HW153"]["message"]
    assert "HW152" in findings and "q4_k_m" in findings["HW152"]["message"]
    assert "HW130" not in findings and "HW133" not in findings


def test_a_local_folder_with_a_config(cli: Cli, tmp_path: Path) -> None:
    cfg = {**LLAMA3_8B, "num_hidden_layers": 4, "hidden_size": 1024, "intermediate_size": 2816}
    cfg |= {"num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 32000}
    folder = write_config(tmp_path / "tiny-llama", cfg)
    doc = _estimate(cli, "--model", str(folder), "--task", "serve", "--on", "rtx-4090")
    llm = doc["workload"]["llm"]
    assert llm["origin"] == "config" and llm["layers"] == 4 and llm["kv_heads"] == 2
    # 2 x 4 layers x 2 KV heads x 128 x 2 bytes.
    assert _one(doc)["serving"]["kv_cache_bytes_per_token"] == 2 * 4 * 2 * 128 * 2
    via_file = _estimate(
        cli, "--model", str(folder / "config.json"), "--task", "serve", "--on", "l4"
    )
    assert via_file["workload"]["llm"]["params_total"] == llm["params_total"]


@pytest.fixture
def offline_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Hugging Face cache, offline."""
    root = tmp_path / "hub"
    root.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return root


def test_a_hub_id_from_the_cache_offline(cli: Cli, offline_cache: Path) -> None:
    repo = "someorg/tiny-chat"
    snap = offline_cache / "models--someorg--tiny-chat"
    (snap / "refs").mkdir(parents=True)
    (snap / "refs" / "main").write_text("rev1")
    write_config(snap / "snapshots" / "rev1", LLAMA3_8B)
    doc = _estimate(cli, "--model", repo, "--task", "serve", "--on", "rtx-4090")
    assert doc["workload"]["llm"]["origin"] == "hub"
    assert doc["workload"]["llm"]["params_total"] == 8_030_261_248


def test_a_hub_id_the_catalog_knows_needs_no_cache(cli: Cli, offline_cache: Path) -> None:
    doc = _estimate(cli, "--model", "meta-llama/Meta-Llama-3-8B", "--task", "serve", "--on", "l4")
    assert doc["workload"]["model"] == "llama-3-8b"


def test_an_uncached_hub_id_offline_says_how_to_fix(cli: Cli, offline_cache: Path) -> None:
    code, out, err = cli("estimate", "--model", "someorg/not-here", "--task", "serve", "--no-bench")
    assert code == 2 and out == ""
    (line,) = [ln for ln in err.splitlines() if ln.strip()]
    assert "HF_HUB_OFFLINE" in line and "download someorg/not-here config.json" in line
    assert "local folder" in line


def _bench_file(path: Path, triad_gb_s: float) -> Path:
    def result(kernel: str, value: float, unit: str, shape: list[int]) -> BenchResult:
        return BenchResult(
            device="cpu", kernel=kernel, dtype="fp32", shape=shape, value=value, unit=unit,
            median_s=0.01, iqr_s=0.0, runs=5,
        )  # fmt: skip

    report = BenchReport(
        budget_s=1.0,
        elapsed_s=1.0,
        results=[
            result("matmul", 400.0, "GFLOP/s", [1024, 1024, 1024]),
            result("triad", triad_gb_s, "GB/s", [10_000_000]),
        ],
    )
    path.write_text(report.model_dump_json(), encoding="utf-8")
    return path


def test_here_serves_at_this_machines_measured_bandwidth(cli: Cli, tmp_path: Path) -> None:
    runs = []
    for gb_s in (20.0, 40.0):
        bench = _bench_file(tmp_path / f"bench{gb_s:g}.json", gb_s)
        code, out, err = cli(
            "estimate", "--model", "llama-3-8b", "--task", "serve", "--quant", "q4_k_m",
            "--on", "here", "--bench-file", str(bench), "--json",
        )  # fmt: skip
        assert code == 0, err
        runs.append(_one(json.loads(out)))
    slow, fast = runs
    assert slow["serving"]["engine"] == "llama.cpp"
    # Decode on a CPU reads the weights once per token: twice the bandwidth, ~twice the speed.
    ratio = fast["serving"]["decode_tokens_per_s"] / slow["serving"]["decode_tokens_per_s"]
    assert 1.8 < ratio <= 2.0
    assert any("measured 20.0 GB/s" in a for a in slow["assumptions"])


def test_here_without_bench_figures_prices_tokens_per_second_from_stated_figures(
    cli: Cli,
) -> None:
    est = _one(_estimate(cli, "--model", "llama-3-8b", "--task", "serve", "--on", "here"))
    assert est["serving"]["decode_tokens_per_s"] is not None
    assert est["serving"]["kv_cache_bytes_per_token"] == 131072
    assert any("serving at the theoretical" in a for a in est["assumptions"])
    assert any("no bandwidth figure: theoretical" in a for a in est["assumptions"])
    assert est["throughput_band"]["band_class"] == "cpu_theoretical"


def test_the_terminal_shows_tokens_per_second_and_time_to_first_token(cli: Cli) -> None:
    code, out, err = cli(
        "estimate", "--model", "llama-3-8b", "--task", "serve", "--on", "rtx-4090", "--on", "l4",
        "--context", "8192", "--concurrency", "16", "--no-bench",
    )  # fmt: skip
    assert code == 0, err
    for text in ("tokens/s", "prefill", "decode", "aggregate", "TTFT", "max seqs"):
        assert text in out, text
    assert "128.0 KiB per token" in out
    assert "Lighter, in order: fp8" in out


def test_rules_explain_takes_the_serving_options(cli: Cli, data_dir: Path) -> None:
    facts = data_dir / "facts" / "laptop.json"
    code, out, err = cli(
        "rules", "explain", "HW153", "--model", "llama-2-70b", "--quant", "fp16",
        "--context", "2048", "--facts", str(facts), "--scenario", "inference",
    )  # fmt: skip
    assert code == 0, err
    assert "HW153" in out and "estimate.best_gpu.serving_options" in out


def test_fleet_ranks_machines_by_serving(cli: Cli, data_dir: Path) -> None:
    reports = data_dir / "reports"
    code, out, err = cli(
        "fleet", "--scenario", "inference", "--model", "llama-3-8b", "--quant", "q4_k_m",
        "--qps", "0.5", "--concurrency", "1", str(reports / "synthetic-t4-inference.json"),
        str(reports / "synthetic-rtx4090-workstation.json"), "--json",
    )  # fmt: skip
    assert code == 0, err
    machines = {m["hostname"]: m for m in json.loads(out)["machines"]}
    rtx, t4 = machines["synthetic-rtx4090-workstation"], machines["synthetic-t4-inference"]
    assert rtx["status"] == "fits" and "tokens/s" in rtx["reason"]
    assert rtx["recommended_device"] == "gpu"  # HW156: the GPU it has serves the load
    assert t4["status"] == "too_slow" and "requests/s < 0.5 QPS" in t4["reason"]


def test_a_served_model_carries_the_llm_decode_band(cli: Cli) -> None:
    from hwadvisor.estimate.timing.bands import load_bands

    est = _one(_estimate(cli, "--model", "llama-3-8b", "--task", "serve", "--on", "rtx-4090"))
    band = est["time_band_s"]
    spec = load_bands()["llm_decode"]
    assert band is not None and band["band_class"] == "llm_decode"
    assert band["basis"] == spec.basis and band["validated"] is True
    step = est["step_time_s"]
    assert band["low"] == pytest.approx(step * min(spec.low_ratio, 1.0))
    assert band["high"] == pytest.approx(step * spec.high_ratio)
    rps = est["throughput_samples_s"]
    assert est["throughput_band"]["high"] == pytest.approx(rps / min(spec.low_ratio, 1.0))


def test_the_default_context_holds_a_long_request(cli: Cli) -> None:
    """--context defaults to max(4096, prompt + output); a context given stays a limit."""
    doc = _estimate(
        cli, "--model", "llama-3-8b", "--task", "serve", "--prompt-tokens", "5000",
        "--output-tokens", "500", "--on", "a100-80gb",
    )  # fmt: skip
    assert doc["workload"]["context"] == 5500
    assert _one(doc)["serving"]["decode_tokens_per_s"] > 0
    code, _, err = cli(
        "estimate", "--model", "llama-3-8b", "--task", "serve", "--prompt-tokens", "5000",
        "--output-tokens", "500", "--context", "4096", "--on", "a100-80gb", "--no-bench",
    )  # fmt: skip
    assert code == 2 and "exceed the context of 4096" in err
