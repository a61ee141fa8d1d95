#!/usr/bin/env python3
"""The parameter overrides for `sam deploy`: those saved in samconfig.toml, with the ones given
on the command line put in their place.

`sam deploy --parameter-overrides X=1` replaces samconfig.toml's `parameter_overrides` as a
whole, so passing only `Architecture` would drop the saved `SinkSecretArn`, `AlarmEmail`, ...
This prints them all, one `Name=value` per line, for scripts/deploy-aws.sh.

Usage: overrides.py <samconfig.toml> Name=value [Name=value ...]
"""
import shlex
import sys
import tomllib
from pathlib import Path


def saved(samconfig: Path, environment: str = "default") -> list[tuple[str, str]]:
    """The `parameter_overrides` of `[<environment>.deploy.parameters]`, in order."""
    if not samconfig.exists():
        return []
    config = tomllib.loads(samconfig.read_text())
    value = config.get(environment, {}).get("deploy", {}).get("parameters", {}).get("parameter_overrides", [])
    # SAM writes a string of `Name="value"` pairs; a list of `Name=value` strings works too.
    words = shlex.split(value) if isinstance(value, str) else list(value)
    return [tuple(w.split("=", 1)) for w in words if "=" in w]


def merged(samconfig: Path, given: list[str]) -> list[str]:
    overrides = dict(saved(samconfig))
    for word in given:
        name, value = word.split("=", 1)
        overrides[name] = value
    return [f"{name}={value}" for name, value in overrides.items()]


if __name__ == "__main__":
    if len(sys.argv) < 2 or any("=" not in w for w in sys.argv[2:]):
        sys.exit(__doc__)
    print("\n".join(merged(Path(sys.argv[1]), sys.argv[2:])))
