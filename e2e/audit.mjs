// Runs graphql-http's GraphQL-over-HTTP audits (the spec's own audit
// client) against the URL given and prints the results as JSON, one array.
// Called by audit_test.go; `npm ci` in e2e/ installs the pinned version.
import { auditServer } from 'graphql-http';

const url = process.argv[2];
if (!url) {
  console.error('usage: node audit.mjs URL');
  process.exit(2);
}
const results = await auditServer({ url });
const out = [];
for (const r of results) {
  const e = { id: r.id, name: r.name, status: r.status };
  if (r.status !== 'ok') {
    e.reason = r.reason;
    try {
      const res = r.response;
      e.response = `${res.status} ${res.headers.get('content-type')} ${(await res.text()).slice(0, 300)}`;
    } catch {
      // the body was read by the audit already
    }
  }
  out.push(e);
}
process.stdout.write(JSON.stringify(out));
