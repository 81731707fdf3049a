/**
 * The Node.js flags every service process runs with: `npm start`, `npm run start:service`, the
 * Docker image (as NODE_OPTIONS, which an operator may override) and the stack of `npm run bench`
 * and `npm run bench:authorization` (test/platform.test.ts checks the first three).
 *
 * A young generation of 64 MiB semi-spaces instead of V8's 16: a GraphQL request allocates much
 * that dies within it, and with 16 MiB the stack at full load scavenged about 40 times a second,
 * 14% of its time, promoting what was still in flight to the old generation. With 64 MiB: a
 * third as many scavenges (their time down by two fifths) and 11% more requests a second on the
 * latest-transactions route, for up to about 150 MiB more memory at peak (docs/performance-history.md).
 */
export const SERVICE_NODE_FLAGS = ['--max-semi-space-size=64'] as const;
