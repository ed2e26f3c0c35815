/**
 * Loads the Pub/Sub v1 service definitions from the pubsub.proto that `@google-cloud/pubsub`
 * ships (and the google/api, google/protobuf protos from google-gax), once per process.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const require = createRequire(import.meta.url);

function protoPaths(): { file: string; includeDirs: string[] } {
  // pubsub.proto imports google/pubsub/v1/schema.proto (ships next to it),
  // google/api/*.proto and google/protobuf/*.proto (ship with google-gax).
  const pubsubMain = require.resolve('@google-cloud/pubsub');
  const pubsubRoot = path.resolve(path.dirname(pubsubMain), '..', '..');
  const pubsubProtos = path.join(pubsubRoot, 'build', 'protos');
  const gaxMain = require.resolve('google-gax', { paths: [pubsubRoot] });
  const gaxProtos = path.resolve(path.dirname(gaxMain), '..', '..', 'build', 'protos');
  return {
    file: path.join(pubsubProtos, 'google', 'pubsub', 'v1', 'pubsub.proto'),
    includeDirs: [pubsubProtos, gaxProtos],
  };
}

export interface ServiceDefs {
  publisher: grpc.ServiceDefinition;
  subscriber: grpc.ServiceDefinition;
}

let cachedDefs: ServiceDefs | undefined;
export function loadServices(): ServiceDefs {
  if (cachedDefs) return cachedDefs;
  const { file, includeDirs } = protoPaths();
  const def = protoLoader.loadSync(file, {
    keepCase: false,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
    includeDirs,
  });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    google: {
      pubsub: {
        v1: { Publisher: { service: grpc.ServiceDefinition }; Subscriber: { service: grpc.ServiceDefinition } };
      };
    };
  };
  cachedDefs = {
    publisher: pkg.google.pubsub.v1.Publisher.service,
    subscriber: pkg.google.pubsub.v1.Subscriber.service,
  };
  return cachedDefs;
}
