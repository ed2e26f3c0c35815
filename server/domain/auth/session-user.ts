/** Who a signed-in request acts for: the account and the address it signed in with. */
export interface SessionUser {
  accountId: string;
  email: string;
}
