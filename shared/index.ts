export * from './client.ts';
export * from './errors.ts';
export * as schemas from './schemas/index.ts';
