import { pick, withoutNulls, type Route } from './route.js';

/** Card management, the webhook sandbox and the deprecated card-add (cards subgraph). */
export const CARD_ROUTES: Route[] = [
  {
    method: 'POST',
    paths: ['/cards/:SvcCardId'],
    api: 'end-user',
    credential: 'token',
    body: 'object',
    operation: 'card-modify.graphql',
    // Only name and isMain change; any other property in the body is ignored.
    variables: ({ params, body }) => ({ SvcCardId: params.SvcCardId, input: pick(body, ['name', 'isMain']) }),
    respond: (data) => data.modifyCard,
  },
  {
    method: 'POST',
    paths: ['/cards/:SvcCardId/:onoff'],
    api: 'end-user',
    credential: 'token',
    body: 'none',
    operation: 'card-onoff.graphql',
    variables: ({ params }) => ({ SvcCardId: params.SvcCardId, onoff: params.onoff }),
    respond: (data) => data.setCardStatus,
  },
  {
    method: 'POST',
    paths: ['/ibis-sandbox/webhook/init'],
    api: 'aggregator',
    credential: 'x-svc-token',
    body: 'object',
    operation: 'sandbox.graphql',
    variables: ({ body }) => ({ input: pick(body, ['svcCardId', 'sandBoxCases']) }),
    respond: (data) => (data.runWebhookSandbox as Array<{ responseData: Record<string, unknown> }>).map((result) => ({ ...result, responseData: withoutNulls(result.responseData) })),
  },
  {
    method: 'POST',
    paths: ['/condor/card/add'],
    api: 'aggregator',
    credential: 'x-svc-token',
    body: 'object',
    operation: 'condor-card-add.graphql',
    variables: ({ body }) => ({ input: pick(body, ['customerId', 'cardAttributes']) }),
    respond: (data) => data.addCondorCard,
  },
];
