export * from './common.ts';
export * from './system.ts';
export * from './status.ts';
export * from './auth.ts';
export * from './mail.ts';
export * from './ai.ts';
export * from './settings.ts';
export * from './analytics.ts';
