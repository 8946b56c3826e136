import { createContext, useContext } from "react";

/**
 * The CSP nonce of the page being rendered (server/http/headers.ts), provided by
 * app/entry.server.tsx. In the browser it is "": that is what a browser shows of a nonce
 * attribute once it has read it (so hydration finds what it renders), and scripts added after
 * hydration are module imports from 'self', which the policy allows without one.
 */
export const NonceContext = createContext("");

export const useNonce = () => useContext(NonceContext);
