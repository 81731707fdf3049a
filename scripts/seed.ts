// `npm run seed`: loads the demo data into MONGODB_URI (or the embedded database). Idempotent.
import { loadConfig } from '../platform/runtime/config.js';
import { openDatabase, seedDemo } from './stack.js';

const config = loadConfig();
if (!config.seedDemo) {
  // The demo data carries published passwords and device secrets.
  console.log('Demo data not loaded: NODE_ENV=production without SEED_DEMO=true.');
  process.exit(0);
}
const { mongo, embedded } = await openDatabase(config);
try {
  await seedDemo(mongo);
  console.log(`Demo data loaded into ${['user', 'cards', 'payments', 'compliance'].map((n) => `${config.dbPrefix}${n}`).join(', ')}.`);
} finally {
  await mongo.close();
  await embedded?.stop();
}
