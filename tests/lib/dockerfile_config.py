"""dockerfile_config.py DOCKERFILE [NAME=VALUE...]: the image configuration a Dockerfile sets, as
JSON in the shape of an OCI image config's `config` object (User, WorkingDir, Entrypoint, Cmd,
ExposedPorts, Labels), each NAME=VALUE a --build-arg. Only what tests/artifacts/image.sh compares
with the image scripts/build-image.sh makes: docker is not on the machines that run the tests, so
this reads the file as docker would for those instructions, and nothing more."""
import json
import re
import shlex
import sys


def instructions(text):
    """(INSTRUCTION, arguments) per logical line: comments dropped, `\\` continuations joined."""
    logical, out = "", []
    for line in text.splitlines():
        if not logical and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            logical += line.rstrip()[:-1] + " "
            continue
        logical += line
        word, _, rest = logical.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
        logical = ""
    return out


def main():
    args = {}
    overrides = dict(a.split("=", 1) for a in sys.argv[2:])
    config = {"Labels": {}, "ExposedPorts": {}}
    with open(sys.argv[1], encoding="utf-8") as f:
        text = f.read()

    def expand(s):
        return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), ""), s)

    for word, rest in instructions(text):
        if word == "FROM":
            config = {"Labels": {}, "ExposedPorts": {}}  # a later stage starts again
        elif word == "ARG":
            name, _, default = rest.partition("=")
            args[name] = overrides.get(name, default)
        elif word == "USER":
            config["User"] = expand(rest)
        elif word == "WORKDIR":
            config["WorkingDir"] = expand(rest)
        elif word == "EXPOSE":
            for port in expand(rest).split():
                config["ExposedPorts"][port if "/" in port else port + "/tcp"] = {}
        elif word in ("ENTRYPOINT", "CMD"):
            # Only the exec (JSON) form: the shell form would run /bin/sh, which the image lacks.
            config[word.capitalize()] = json.loads(rest)
        elif word == "LABEL":
            for pair in shlex.split(rest):
                key, _, value = pair.partition("=")
                config["Labels"][key] = expand(value)
    json.dump(config, sys.stdout, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
