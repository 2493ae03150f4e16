"""Line framing over every prefix style (lines copied from real torch logs)."""

from __future__ import annotations

import pytest

from guarddiag.logparse.framing import frame

GLOG = "V1130 09:16:55.668000 1968 torch/_dynamo/guards.py:5396] [0/1] [__recompiles] Recompiling function run in /tmp/s1.py:10"


def test_glog_line():
    f = frame(GLOG)
    assert (f.level, f.compile_id, f.artifact, f.rank) == ("V", "0/1", "__recompiles", None)
    assert f.body == "Recompiling function run in /tmp/s1.py:10"


def test_glog_with_rank_attempt_and_long_thread_id():
    f = frame("[rank1]:V1130 07:22:30.181000 140234567891234 torch/_dynamo/guards.py:2025] [1/0_1] [__guards] | +- X")
    assert (f.rank, f.compile_id, f.artifact, f.body) == (1, "1/0_1", "__guards", "| +- X")


def test_glog_without_compile_id_or_artifact():
    f = frame("I1130 09:16:56.198000 1968 torch/_dynamo/eval_frame.py:772]   * run /tmp/exp/s1.py:10")
    assert f.compile_id is None and f.artifact is None
    assert f.body == "  * run /tmp/exp/s1.py:10"


def test_windows_origin_path():
    f = frame(r"V1130 09:16:55.668000 1968 C:\venv\Lib\site-packages\torch\_dynamo\guards.py:5396] [0/1] [__recompiles] x")
    assert f.compile_id == "0/1" and f.body == "x"


def test_bracketed_date_style():
    f = frame("[2023-11-06 14:54:08,549] [0/0] torch._dynamo.guards.__guards: [DEBUG] GUARDS:")
    assert (f.level, f.compile_id, f.artifact, f.body) == ("D", "0/0", "__guards", "GUARDS:")


def test_bracketed_warning_without_compile_id():
    f = frame("[2023-11-06 14:54:08,549] torch._dynamo.convert_frame: [WARNING] torch._dynamo hit config.cache_size_limit (8)")
    assert f.level == "W" and f.compile_id is None and f.body.startswith("torch._dynamo hit")


def test_python_default_style():
    f = frame("DEBUG:torch._dynamo.guards.__recompiles:Recompiling function f in x.py:3")
    assert (f.artifact, f.body) == ("__recompiles", "Recompiling function f in x.py:3")


@pytest.mark.parametrize("line", ["", "hi", "[foo] bar", "Epoch 1: loss 0.3", "Traceback (most recent call last):"])
def test_user_output_is_not_torch(line):
    assert frame(line) is None


def test_a_ray_or_vllm_worker_tag_before_the_rank_prefix():
    """vLLM and Ray put the worker's tag before every line a worker prints (vllm-project/vllm-ascend#1368)."""
    line = (
        "(VllmWorker rank=7 pid=300) [rank7]:I0618 08:07:39.654000 300 site-packages/torch/fx/experimental/"
        "symbolic_shapes.py:3557] [0/0] create_symbol s0 = 2048 for L['input_ids'].size()[0]"
    )
    framed = frame(line)
    assert framed is not None and (framed.rank, framed.compile_id, framed.level) == (7, "0/0", "I")
    assert frame("(RayWorkerWrapper pid=1234, ip=10.0.0.1) " + line.partition(") ")[2]).rank == 7
    # Parentheses without a pid are not a worker's tag: the line is not a torch line.
    assert frame("(note) " + line.partition(") ")[2]) is None
