import { createGraphClient } from '../../../platform/graph-client.js';
import type { HttpService } from '../../../platform/http.js';
import { startSubgraph, type SubgraphStartOptions } from '../../../platform/subgraph.js';
import { createCardsContext } from './context.js';
import { cardsCollection } from './datasources/cards.js';
import { resolvers } from './resolvers/index.js';

/** Starts the cards subgraph. */
export async function start(options: SubgraphStartOptions): Promise<HttpService> {
  const db = options.mongo.db('cards');
  await cardsCollection(db).createIndex({ SvcUserId: 1 });
  const graph = createGraphClient(options.config, 'cards');
  return startSubgraph({
    ...options,
    name: 'cards',
    resolvers,
    createContext: (base) => createCardsContext(base, db, graph, options.config),
  });
}
