#!/usr/bin/env python3
"""Before `sam deploy` creates a stack: can the account reserve ReconcileFunction's execution?

With `ReconcileConcurrency: 1` the template reserves one execution for reconcile. Lambda refuses
a reservation that leaves the account fewer unreserved executions than its minimum (100, or the
whole limit on a new account whose limit is lower: "Specified ReservedConcurrentExecutions for
function decreases account's UnreservedConcurrentExecution below its minimum value of [10]").
On a stack's first create that fails and rolls back, the retained receipts table stays behind,
and the next deploy fails again with "already exists". This check refuses first, naming the
way out (`ReconcileConcurrency=unreserved`, or a higher quota).

Usage: concurrency.py <stack> <region> <ReconcileConcurrency>
Exit 0: the stack exists already (an update), or the parameter is `unreserved`, or the
reservation fits; exit 1 with the reason otherwise (and for a stack whose first create rolled
back, which cannot be updated). With `-` for the stack (a guided first
deploy: no name or answers yet) it only says which answer the account needs, and exits 0.
Reads the account with boto3 (so AWS_ENDPOINT_URL points it at a local AWS).
"""
import sys

from botocore.exceptions import ClientError

# Lambda keeps at least this many executions unreserved (lower only when the account's whole
# limit is lower, as on new accounts): API_PutFunctionConcurrency.
UNRESERVED_MINIMUM = 100


def refusal(limit: int, unreserved: int, wanted: str) -> str | None:
    """Why reserving `wanted` executions (the parameter's text) fails on an account with these
    `AccountLimit` figures, or None when it fits (or nothing is reserved)."""
    if wanted == "unreserved":
        return None
    reserve = int(wanted)
    minimum = min(UNRESERVED_MINIMUM, limit)
    if unreserved - reserve >= minimum:
        return None
    return (
        f"the account's Lambda concurrency limit is {limit} with {unreserved} unreserved; reserving "
        f"{reserve} for ReconcileFunction would leave {unreserved - reserve}, below Lambda's minimum of "
        f"{minimum}, and the stack's first create would fail and roll back (leaving the retained table). "
        "Deploy with ReconcileConcurrency=unreserved (docs/deploying.md), or ask AWS for a higher "
        "'Concurrent executions' quota first."
    )


# Stack states in which `sam deploy` creates the stack (SAM CLI's deployer: a stack a change set
# was made for but never executed is REVIEW_IN_PROGRESS, and is created, not updated).
NOT_CREATED = {"REVIEW_IN_PROGRESS", "DELETE_COMPLETE"}


def stack_status(cloudformation, stack: str) -> str | None:
    """The status of `stack`, or None when `sam deploy` would create it."""
    try:
        stacks = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    except ClientError as error:
        # CloudFormation answers a missing stack with ValidationError "Stack with id X does not exist".
        if error.response.get("Error", {}).get("Code") == "ValidationError" and "does not exist" in str(error):
            return None
        raise
    statuses = [s.get("StackStatus") for s in stacks if s.get("StackStatus") not in NOT_CREATED]
    return statuses[0] if statuses else None


def check(cloudformation, lambda_client, stack: str, wanted: str) -> str | None:
    """The refusal for creating `stack` with ReconcileConcurrency `wanted`, if any. An existing
    stack already holds its reservation, so updates are not checked; a stack whose first create
    rolled back cannot be updated, and is named with the way out."""
    status = stack_status(cloudformation, stack)
    if status == "ROLLBACK_COMPLETE":
        return (
            f"stack {stack} is ROLLBACK_COMPLETE (its first create failed): delete it (aws cloudformation "
            "delete-stack), and the receipts table it left behind (retained, empty: aws dynamodb update-table "
            "--no-deletion-protection-enabled, then delete-table), then deploy again"
        )
    if wanted == "unreserved" or status is not None:
        return None
    limits = lambda_client.get_account_settings()["AccountLimit"]
    return refusal(limits["ConcurrentExecutions"], limits["UnreservedConcurrentExecutions"], wanted)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    import boto3

    from botocore.exceptions import BotoCoreError

    stack, region, wanted = sys.argv[1:]
    lambda_client = boto3.client("lambda", region_name=region)
    try:
        if stack in ("-", ""):
            limits = lambda_client.get_account_settings()["AccountLimit"]
            if refusal(limits["ConcurrentExecutions"], limits["UnreservedConcurrentExecutions"], wanted):
                print(f"deploy-aws: this account cannot reserve an execution for reconcile in {region}: when SAM "
                      "asks for ReconcileConcurrency, answer unreserved")
            sys.exit(0)
        reason = check(boto3.client("cloudformation", region_name=region), lambda_client, stack, wanted)
    except (ClientError, BotoCoreError) as error:
        # Advice only without a stack; otherwise the check could not be made: say why, go no further.
        if stack in ("-", ""):
            print(f"deploy-aws: could not read the account's Lambda concurrency ({error}); continuing")
            sys.exit(0)
        sys.exit(f"deploy-aws: could not check the account's Lambda concurrency before creating {stack} ({error}): "
                 "the deploying identity needs lambda:GetAccountSettings and cloudformation:DescribeStacks")
    if reason:
        sys.exit(f"deploy-aws: {reason}")
