// `npm run seed`: loads the demo data into MONGODB_URI (or the embedded database). Idempotent.
import { loadConfig } from '../platform/config.js';
import { openDatabase, seedDemo } from './stack.js';

const config = loadConfig();
const { mongo, embedded } = await openDatabase(config);
try {
  await seedDemo(mongo);
  console.log(`Demo data loaded into ${['user', 'cards', 'payments', 'compliance'].map((n) => `${config.dbPrefix}${n}`).join(', ')}.`);
} finally {
  await mongo.close();
  await embedded?.stop();
}
