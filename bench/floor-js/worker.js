// The runtime's floor for the edge benchmark (`make bench`): a JavaScript Worker that does only
// what every receiver must. It reads one header and the body, sends one constant, pre-signed
// PutItem (built by scripts/bench.py) to the store, and maps the store's status to an answer.
// It validates nothing, so it is not a receiver: it is the cost of the request plumbing.
export default {
  async fetch(request, env) {
    request.headers.get("idempotency-key");
    await request.arrayBuffer();
    const stored = await fetch(env.STORE_URL, {
      method: "POST",
      headers: {
        "content-type": env.PUT_CONTENT_TYPE,
        "x-amz-target": env.PUT_TARGET,
        "x-amz-date": env.PUT_DATE,
        authorization: env.PUT_AUTHORIZATION,
      },
      body: env.PUT_BODY,
    });
    await stored.arrayBuffer();
    const status = stored.status === 200 ? 202 : 503;
    return new Response(`{"status":${status}}`, { status, headers: { "content-type": "application/json" } });
  },
};
