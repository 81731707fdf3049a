import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkSupergraph, composeSupergraph, GATEWAY_SUBSCRIPTIONS_PATH, readSubgraphSdls, SUPERGRAPH_PATH } from '../../schema/compose.js';

describe('the composed supergraph', () => {
  it('composes from the four subgraph SDL files without errors', () => {
    const composed = composeSupergraph();
    expect(composed.errors).toEqual([]);
    expect(composed.supergraphSdl).toContain('join__Graph');
  });

  it('is committed up to date (run `npm run compose` after changing a subgraph SDL)', () => {
    expect(checkSupergraph(readFileSync(SUPERGRAPH_PATH, 'utf8'))).toEqual({ stale: false, errors: [] });
  });

  it('is reported stale when a subgraph SDL changes and the supergraph does not', () => {
    const sdls = readSubgraphSdls();
    sdls.compliance = `${sdls.compliance}\nextend type Restriction { note: String }\n`;
    expect(checkSupergraph(readFileSync(SUPERGRAPH_PATH, 'utf8'), sdls)).toEqual({ stale: true, errors: [] });
  });

  it('reports composition errors instead of a supergraph', () => {
    const sdls = readSubgraphSdls();
    // Two subgraphs disagree on the type of a shared key field.
    sdls.cards = sdls.cards!.replace(
      'type User @key(fields: "SvcUserId") {\n  SvcUserId: ID!',
      'type User @key(fields: "SvcUserId") {\n  SvcUserId: Int!',
    );
    const result = checkSupergraph(readFileSync(SUPERGRAPH_PATH, 'utf8'), sdls);
    expect(result.stale).toBe(true);
    expect(result.errors.length).toBeGreaterThan(0);
  });

  it('refuses a Subscription type in a subgraph: the gateway serves and declares subscriptions (schema/gateway-subscriptions.graphql)', () => {
    const sdls = readSubgraphSdls();
    sdls.cards = `${sdls.cards}\ntype Subscription {\n  cardStatusChanged: Card!\n}\n`;
    const result = checkSupergraph(readFileSync(SUPERGRAPH_PATH, 'utf8'), sdls);
    expect(result.errors).toEqual([expect.stringContaining('schema/gateway-subscriptions.graphql')]);
  });

  it('reports a gateway subscription that names a type the graph does not have', () => {
    const served = readFileSync(GATEWAY_SUBSCRIPTIONS_PATH, 'utf8');
    const subscriptions = served.replace(/(cardStatusChanged(?:\([\s\S]*?\))?): Card!/, '$1: Kard!');
    expect(subscriptions).not.toBe(served);
    const result = checkSupergraph(readFileSync(SUPERGRAPH_PATH, 'utf8'), undefined, undefined, subscriptions);
    expect(result.errors).toEqual([expect.stringContaining('Kard')]);
  });
});
