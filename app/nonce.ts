import { createContext, useContext } from "react";

/**
 * The CSP nonce of the page being rendered (server/http/headers.ts), provided by
 * app/entry.server.tsx. In the browser it is undefined: scripts added after hydration are
 * module imports from 'self', which the policy allows without one.
 */
export const NonceContext = createContext<string | undefined>(undefined);

export const useNonce = () => useContext(NonceContext);
