import type { ListCaps } from '../../../platform/graphql/list-caps.js';

/** The most items of each list the cards subgraph takes from clients (see platform/graphql/list-caps.ts). */
export const CARDS_LIST_CAPS = {
  // Each case is a signed webhook delivery of up to its deadline; the catalogue has six.
  'SandboxInput.sandBoxCases': 20,
} as const satisfies ListCaps;
