"""wrangler as scripts/deploy-edge.sh calls it (`deploy`, `secret list --format json`, `secret
bulk <file>`, each for the edge or, with `--config tail/wrangler.toml`, its Tail Worker; every
write refused while FAKE_WRANGLER_REFUSE_WRITES is set), for tests/it/deploy_edge.rs: the
edge's secrets are kept in the JSON file FAKE_WRANGLER_STATE, the Tail Worker's beside it
(`-tail`), and each call is logged beside it (`.log`, a JSON object a line, naming the Worker).
A secret write logs what a Worker holding the secrets would meet at that instant: the status
IAM gives each access key of the stack's user for that Worker (EdgeUser, EdgeLogsUser), and
whether the Worker's key pair signs at all (STS answers it). Runs under .tools/aws's Python
(boto3), on the AWS the environment points at."""

import json
import os
import sys

import boto3

args = sys.argv[1:]
WORKER = "edge"
if "--config" in args:
    at = args.index("--config")
    if at + 1 == len(args) or args[at + 1] != "tail/wrangler.toml":
        sys.exit(f"fake wrangler: no such configuration {args[at + 1:at + 2]}")
    WORKER = "tail"
    del args[at:at + 2]
LOG = os.environ["FAKE_WRANGLER_STATE"] + ".log"
STATE = os.environ["FAKE_WRANGLER_STATE"] + ("-tail" if WORKER == "tail" else "")
USER = {"edge": "EdgeUser", "tail": "EdgeLogsUser"}[WORKER]


def load():
    if not os.path.exists(STATE):
        return {}
    with open(STATE) as f:
        return json.load(f)


def log(event):
    with open(LOG, "a") as f:
        f.write(json.dumps({"worker": WORKER, **event}) + "\n")


def user_keys():
    """Every access key of the users whose name holds this Worker's user's, and its status."""
    iam = boto3.client("iam", region_name=os.environ["AWS_REGION"])
    keys = {}
    for user in iam.list_users()["Users"]:
        if USER in user["UserName"]:
            for key in iam.list_access_keys(UserName=user["UserName"])["AccessKeyMetadata"]:
                keys[key["AccessKeyId"]] = key["Status"]
    return keys


def signs(secrets):
    """Whether the Worker's pair is a key STS accepts."""
    if "AWS_ACCESS_KEY_ID" not in secrets or "AWS_SECRET_ACCESS_KEY" not in secrets:
        return False
    sts = boto3.client("sts", region_name=os.environ["AWS_REGION"], aws_access_key_id=secrets["AWS_ACCESS_KEY_ID"],
                       aws_secret_access_key=secrets["AWS_SECRET_ACCESS_KEY"])
    try:
        sts.get_caller_identity()
        return True
    except Exception:
        return False


if args[:1] == ["deploy"]:
    log({"call": "deploy"})
elif args[:2] == ["secret", "list"]:
    print(json.dumps([{"name": name, "type": "secret_text"} for name in sorted(load())]))
elif args[:2] == ["secret", "bulk"] and os.environ.get("FAKE_WRANGLER_REFUSE_WRITES"):
    # Cloudflare refusing the write (an expired login, an outage): nothing changes.
    log({"call": "secret bulk refused"})
    sys.exit("fake wrangler: the secrets could not be written")
elif args[:2] == ["secret", "bulk"]:
    with open(args[2]) as f:
        written = json.load(f)
    secrets = {**load(), **written}
    with open(STATE, "w") as f:
        json.dump(secrets, f)
    log({"call": "secret bulk", "names": sorted(written), "worker_key": secrets.get("AWS_ACCESS_KEY_ID"),
         "keys": user_keys(), "signs": signs(secrets)})
    print("Finished processing secrets file")
else:
    sys.exit(f"fake wrangler: no such call {args}")
