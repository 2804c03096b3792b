"""The Slurm reader's node lists, job arrays and bad records (issue 32), on hand-made lines and on
the real sacct captures Open XDMoD tests its shredder with (ubccr/xdmod @ 33015b5d,
tests/artifacts/xdmod/unit/shredder/slurm/input/, LGPL-3.0 test data; see
../shared/data/SOURCES.md). XDMoD runs sacct --noheader, so each is given its field order's header."""

from __future__ import annotations

from pathlib import Path

import pytest

from athanor.ingest.jobs import JobRunError, expand_array_id, expand_hostlist, read_job_runs

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "jobs"
XDMOD_FIELDS = (
    "JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|GID|User|UID|Submit|Eligible|Start|End|Elapsed"
    "|ExitCode|State|NNodes|NCPUS|ReqCPUS|ReqMem|ReqTRES|AllocTRES|Timelimit|NodeList|JobName"
)


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("ip-10-0-1-[11-12]", ["ip-10-0-1-11", "ip-10-0-1-12"]),
        ("d09n04s[01-02]", ["d09n04s01", "d09n04s02"]),
        ("a1,b[1-2],c", ["a1", "b1", "b2", "c"]),
        ("d13n[03,05,07-08]", ["d13n03", "d13n05", "d13n07", "d13n08"]),
        ("r[1-2]n[01-02]", ["r1n01", "r1n02", "r2n01", "r2n02"]),
        ("node[8-11]", ["node8", "node9", "node10", "node11"]),
        ("", []),
        ("None assigned", []),
    ],
)
def test_host_lists_expand(text: str, hosts: list[str]) -> None:
    assert expand_hostlist(text) == hosts


@pytest.mark.parametrize("text", ["n[1-", "n1]", "n[3-1]", "n[a-b]", "a,,b"])
def test_broken_host_lists_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        expand_hostlist(text)


@pytest.mark.parametrize(
    ("job_id", "tasks"),
    [
        ("4103947_[1-3]", ["4103947_1", "4103947_2", "4103947_3"]),
        ("4103947_[1-3,5]", ["4103947_1", "4103947_2", "4103947_3", "4103947_5"]),
        ("7_[2,4-5%2]", ["7_2", "7_4", "7_5"]),
        ("4103947_100", ["4103947_100"]),
        ("4103947", ["4103947"]),
    ],
)
def test_compacted_arrays_expand_to_their_tasks(job_id: str, tasks: list[str]) -> None:
    assert expand_array_id(job_id) == tasks


def named(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.log"
    path.write_text(XDMOD_FIELDS + "\n" + (DATA / f"xdmod-sacct-{name}.log").read_text())
    return path


@pytest.mark.realdata
def test_xdmod_job_arrays_load_one_row_per_task(tmp_path: Path) -> None:
    # Six lines: _100 (1 task), _[1-3] (3), _[1,5] (2), _[9-11,20] (4), _[91,100-102] (4),
    # _[9-11,13,16-20] (9): 23 tasks named, of which 1, 9, 10, 11, 20 and 100 twice: 17 tasks.
    df = read_job_runs(named(tmp_path, "job-arrays"))
    assert sorted(df["job_id"], key=lambda j: int(j.split("_")[1])) == [
        f"4103947_{t}" for t in (1, 2, 3, 5, 9, 10, 11, 13, 16, 17, 18, 19, 20, 91, 100, 101, 102)
    ]
    assert df.attrs["warnings"] == ["job-arrays.log: 6 job ids listed again; the later line of each kept"]
    # Each task ran on the line's 32 nodes (27 listed singly or in brackets: d09n04s[01-02],
    # d09n08s[01-02], d09n11s[01-02] and d13n[03,05,07-08,16] make 32).
    nodes = df["node_list"].iloc[0].split(",")
    assert len(nodes) == 32 and set(df["instance_count"]) == {32}
    assert nodes[7:9] == ["d09n04s01", "d09n04s02"] and nodes[-5:] == [
        "d13n03",
        "d13n05",
        "d13n07",
        "d13n08",
        "d13n16",
    ]


@pytest.mark.realdata
def test_xdmod_accounting_loads_the_zero_node_record_and_reads_its_gpus(tmp_path: Path) -> None:
    df = read_job_runs(named(tmp_path, "accounting")).set_index("job_id")
    assert list(df.index) == ["4103947", "4107166", "4107219", "5692623"]
    # 5692623: NNodes 0, NodeList cpn-k16-35-01,cpn-k16-37-01, AllocTRES gres/gpu=2, run for 0 s.
    zero = df.loc["5692623"]
    assert (zero["instance_count"], zero["gpu_count"], zero["gpus_per_instance"]) == (2, 2, 1)
    assert zero["node_list"] == "cpn-k16-35-01,cpn-k16-37-01" and zero["gpu_hours"] == 0.0
    assert df.loc["4107166", "node_list"] == "k10n26s01,k13n36s01,k13n37s01"
    assert df.attrs["warnings"] == ["accounting.log row 4: NNodes 0 but NodeList names 2: counted 2"]


@pytest.mark.realdata
def test_xdmod_non_ended_jobs_load_running(tmp_path: Path) -> None:
    df = read_job_runs(named(tmp_path, "non-ended"), as_of="2020-07-01T00:00:00").set_index("job_id")
    assert list(df["state"]) == ["running", "running"]
    assert df.loc["3451067", "duration_s"] == 4 * 3600 + 35 * 60 + 52  # from 19:24:08 to midnight
    assert pd_isna(df.loc["3483276", "start_time"])  # PENDING: not started


def pd_isna(value: object) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


GOOD = "{id}|gpu|a|2026-11-03T00:00:00|2026-11-03T00:00:00|2026-11-03T01:00:00|COMPLETED|1|gres/gpu=8|n1"


def test_a_bad_record_is_rejected_alone_with_its_reason(tmp_path: Path, caplog) -> None:
    path = tmp_path / "sacct.txt"
    lines = [GOOD.format(id=i) for i in range(1, 21)]
    lines[4] = lines[4].replace("COMPLETED", "EXPLODED")  # row 5
    lines[9] = lines[9].replace("|n1", "|n[1-")  # row 10
    path.write_text(
        "JobID|Partition|Account|Submit|Start|End|State|NNodes|AllocTRES|NodeList\n" + "\n".join(lines)
    )
    with caplog.at_level("WARNING", logger="athanor.ingest.jobs"):
        df = read_job_runs(path)
    assert len(df) == 18 and "5" not in set(df["job_id"]) and "10" not in set(df["job_id"])
    assert df.attrs["rejected"] == {
        "NodeList: not a Slurm host list: unbalanced '['": 1,
        "State: unknown Slurm job state": 1,
    }
    messages = [r.getMessage() for r in caplog.records]
    assert "rejected: sacct.txt row 5, column State: unknown Slurm job state ('EXPLODED')" in messages
    assert messages[-1] == (
        "sacct.txt: 2 of 20 records rejected, the rest loaded (1 NodeList: not a Slurm host list: "
        "unbalanced '['; 1 State: unknown Slurm job state)"
    )


def test_too_many_bad_records_refuse_the_log(tmp_path: Path) -> None:
    # 3 of 20 records bad: 15 % > the default 10 %; with a 20 % threshold they load without them.
    path = tmp_path / "sacct.txt"
    lines = [GOOD.format(id=i) for i in range(1, 21)]
    for row in (1, 2, 3):
        lines[row] = lines[row].replace("|1|gres", "|x|gres")
    path.write_text(
        "JobID|Partition|Account|Submit|Start|End|State|NNodes|AllocTRES|NodeList\n" + "\n".join(lines)
    )
    with pytest.raises(JobRunError) as caught:
        read_job_runs(path)
    assert str(caught.value).startswith(
        "sacct.txt: 3 problems, first 3:\n  sacct.txt row 2, column NNodes: not an integer"
    )
    assert len(read_job_runs(path, max_bad_share=0.2)) == 17


def test_a_generic_log_may_name_its_jobs_nodes(tmp_path: Path) -> None:
    # The optional node_list column of the generic schema: comma-separated or compacted hosts.
    path = tmp_path / "jobs.csv"
    head = "job_id,submit_time,start_time,end_time,state,instance_type,instance_count,gpus_per_instance,pricing_model,node_list\n"
    row = "{id},2026-11-03T00:00:00,2026-11-03T00:00:00,2026-11-03T01:00:00,completed,p4d.24xlarge,{n},8,on_demand,{nodes}\n"
    path.write_text(
        head
        + row.format(id="j1", n=2, nodes='"ip-10-0-1-[11-12]"')
        + row.format(id="j2", n=2, nodes='"a1,b2"')
        + row.format(id="j3", n=1, nodes="")
    )
    df = read_job_runs(path).set_index("job_id")
    assert df.loc["j1", "node_list"] == "ip-10-0-1-11,ip-10-0-1-12" and df.loc["j2", "node_list"] == "a1,b2"
    assert pd_isna(df.loc["j3", "node_list"])
    path.write_text(head + row.format(id="j1", n=1, nodes="n[1-"))
    with pytest.raises(
        JobRunError, match=r"jobs.csv row 1, column node_list: not a host list: unbalanced '\['"
    ):
        read_job_runs(path)
