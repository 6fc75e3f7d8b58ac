// After a first factor (password, third-party account): the server either signed in (data is the user) or
// asks for the two-factor code (new-api's {require_2fa, flow_token}); the login page takes the code.
// A super admin who must set up two-factor sign-in lands on the personal page's setup.
export interface PendingSignIn {
  require_2fa: true;
  flow_token: string;
  expires_at?: number;
}

export const needsSecondFactor = (data: unknown): data is PendingSignIn =>
  !!(data as PendingSignIn | undefined)?.require_2fa;

/** Where a signed-in user goes next. */
export const landingAfterSignIn = (data: unknown, fallback: string): string =>
  (data as { require_2fa_setup?: boolean } | undefined)?.require_2fa_setup ? "/personal?twofa=setup" : fallback;

/** Router state handing a pending sign-in to the login page's code step. */
export const secondFactorState = (data: PendingSignIn) => ({ state: { flow_token: data.flow_token } });
