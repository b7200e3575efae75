"""`a3c-course doctor`: reports versions and ROMs, and gives a fix for each problem."""

from a3c_course.lessons import doctor


def run() -> tuple[bool, str]:
    lines = []
    healthy = doctor.run_doctor(lines.append)
    return healthy, "\n".join(lines)


def test_healthy_machine_reports_versions_roms_and_cpus():
    healthy, text = run()
    assert healthy, text
    for expected in (
        "python",
        "torch",
        "gymnasium",
        "ale-py",
        "numpy",
        "breakout ROM",
        "pong ROM",
        "CPUs",
        "GPU",
    ):
        assert expected in text
    assert text.endswith("All good: the course can run here.")


def test_missing_package_is_reported_with_its_fix(monkeypatch):
    real = doctor.version_of
    monkeypatch.setattr(doctor, "version_of", lambda name: None if name == "ale-py" else real(name))
    healthy, text = run()
    assert not healthy
    assert "BAD  ale-py" in text and "not installed" in text
    assert "fix: pip install" in text and "ROMs" in text


def test_old_package_is_reported(monkeypatch):
    real = doctor.version_of
    monkeypatch.setattr(
        doctor, "version_of", lambda name: "0.29.1" if name == "gymnasium" else real(name)
    )
    healthy, text = run()
    assert not healthy and "0.29.1 is older than 1.0" in text


def test_rom_that_fails_to_load_is_reported(monkeypatch):
    import a3c_course.a3c.envs

    def broken(game, **kwargs):
        raise RuntimeError("ROM not found")

    monkeypatch.setattr(a3c_course.a3c.envs, "make_env", broken)
    finding = doctor.check_rom("pong")
    assert not finding.ok and "ROM not found" in finding.detail and "ale-py" in finding.fix


def test_version_comparison():
    assert doctor.major_minor("2.13.0+cpu") == (2, 13)
    assert doctor.major_minor("1.0rc1") == (1, 0)
    assert doctor.major_minor("0.12.1") > doctor.major_minor("0.9")


def test_missing_ffmpeg_is_reported_with_its_fix(monkeypatch):
    from a3c_course.lessons import video

    monkeypatch.setattr(video, "_ffmpeg_available", lambda: False)
    healthy, text = run()
    assert not healthy
    assert "BAD  video (ffmpeg)" in text and "fall back to GIF" in text
    assert 'fix: pip install "imageio-ffmpeg' in text


def test_ffmpeg_is_started_without_a_preexec_fn():
    # imageio-ffmpeg's preexec_fn (os.setpgrp) forks a threaded process before exec: it can deadlock
    # a Jupyter kernel. Importing the course's video module opts out of it.
    import imageio_ffmpeg._utils as ffmpeg_utils

    from a3c_course.lessons import video  # noqa: F401

    assert ffmpeg_utils._popen_kwargs(prevent_sigint=True)["preexec_fn"] is None
