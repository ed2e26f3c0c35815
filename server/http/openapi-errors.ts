/** The errors each REST operation can answer, per spec part 4, for the OpenAPI document. */
import type { ErrorCatalogue } from './openapi.ts';

const AI = ['AUTH_REQUIRED', 'CSRF_FAILED', 'VALIDATION_FAILED', 'NOT_FOUND', 'AI_BUDGET_EXCEEDED', 'AI_RATE_LIMITED', 'AI_REQUEST_FAILED', 'SERVICE_UNAVAILABLE'] as const;

export const API_ERRORS: ErrorCatalogue = {
  'GET /auth/session': ['SERVICE_UNAVAILABLE'],
  'POST /auth/logout': ['SERVICE_UNAVAILABLE'],
  'POST /auth/provider/disconnect': ['AUTH_REQUIRED', 'CSRF_FAILED', 'TOKEN_EXPIRED', 'SERVICE_UNAVAILABLE'],
  'DELETE /auth/account': ['AUTH_REQUIRED', 'CSRF_FAILED', 'VALIDATION_FAILED', 'SERVICE_UNAVAILABLE'],
  'POST /api/mail/sync': ['AUTH_REQUIRED', 'CSRF_FAILED', 'MAIL_RATE_LIMITED', 'SYNC_FAILED', 'TOKEN_EXPIRED', 'SERVICE_UNAVAILABLE'],
  'GET /api/mail/sync-state': ['AUTH_REQUIRED', 'SERVICE_UNAVAILABLE'],
  'GET /api/mail/threads': ['AUTH_REQUIRED', 'VALIDATION_FAILED', 'SERVICE_UNAVAILABLE'],
  'GET /api/mail/threads/{threadId}': ['AUTH_REQUIRED', 'VALIDATION_FAILED', 'NOT_FOUND', 'TOKEN_EXPIRED', 'SERVICE_UNAVAILABLE'],
  'POST /api/mail/threads/{threadId}/analyze': AI,
  'POST /api/mail/threads/{threadId}/draft': AI,
  'GET /api/settings': ['AUTH_REQUIRED', 'SERVICE_UNAVAILABLE'],
  'PATCH /api/settings': ['AUTH_REQUIRED', 'CSRF_FAILED', 'VALIDATION_FAILED', 'SERVICE_UNAVAILABLE'],
  'POST /api/analytics/event': ['VALIDATION_FAILED', 'AUTH_REQUIRED', 'SERVICE_UNAVAILABLE'],
  'GET /api/status/incidents': ['SERVICE_UNAVAILABLE'],
  'POST /api/status/incidents': ['FORBIDDEN', 'VALIDATION_FAILED', 'SERVICE_UNAVAILABLE'],
  'PATCH /api/status/incidents/{id}': ['FORBIDDEN', 'VALIDATION_FAILED', 'NOT_FOUND', 'SERVICE_UNAVAILABLE'],
};

export const NO_CONTENT_OPERATIONS = ['POST /auth/logout', 'POST /auth/provider/disconnect', 'DELETE /auth/account'];
export const CREATED_OPERATIONS = ['POST /api/status/incidents'];
