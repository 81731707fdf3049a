import type { Config } from '../../../platform/config.js';
import type { HttpService } from '../../../platform/http.js';
import type { Logger } from '../../../platform/logger.js';
import type { Mongo } from '../../../platform/mongo.js';
import { startSubgraph } from '../../../platform/subgraph.js';
import { createCardsContext } from './context.js';
import { cardsCollection } from './datasources/cards.js';
import { resolvers } from './resolvers/index.js';

/** Starts the cards subgraph. */
export async function start(options: { config: Config; logger: Logger; mongo: Mongo; port?: number }): Promise<HttpService> {
  const db = options.mongo.db('cards');
  await cardsCollection(db).createIndex({ SvcUserId: 1 });
  return startSubgraph({
    name: 'cards',
    config: options.config,
    logger: options.logger,
    mongo: options.mongo,
    port: options.port ?? options.config.ports.cards,
    resolvers,
    createContext: (base) => createCardsContext(base, db),
  });
}
