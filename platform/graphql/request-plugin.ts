import type { BaseContext, GraphQLRequestContext, GraphQLRequestListener } from '@apollo/server';

/**
 * The hooks of a request our plugins may use: those both Apollo Server (the subgraphs) and the
 * gateway's own operation pipeline run. A listener with any other hook does not compile.
 */
export type RequestListener<TContext extends BaseContext> = Pick<
  GraphQLRequestListener<TContext>,
  'didResolveOperation' | 'didEncounterErrors' | 'responseForOperation' | 'willSendResponse'
>;

/** A plugin of the request pipeline: Apollo Server's shape, with only the request's start and the hooks above. */
export interface RequestPlugin<TContext extends BaseContext> {
  requestDidStart(requestContext: GraphQLRequestContext<TContext>): Promise<RequestListener<TContext> | undefined>;
}
