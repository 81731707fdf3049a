// The GraphQL IDE, served by the gateway in development: GraphiQL bundled from npm, no CDN.
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { GraphiQL } from 'graphiql';
import 'graphiql/graphiql.css';
import { createRoot } from 'react-dom/client';

const url = `${location.origin}/graphql`;
const subscriptionUrl = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`;
const fetcher = createGraphiQLFetcher({ url, subscriptionUrl });

createRoot(document.getElementById('graphiql')!).render(
  <GraphiQL fetcher={fetcher} defaultHeaders={'{\n  "token": ""\n}'} isHeadersEditorEnabled shouldPersistHeaders={false} />,
);
