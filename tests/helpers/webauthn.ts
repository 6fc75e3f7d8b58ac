// A software passkey for tests: an ES256 key pair (node:crypto) that answers the server's registration
// options with a "none" attestation and its login options with a signed assertion, exactly as a browser
// hands them to the page (base64url JSON). Counters rise with each use, like a real authenticator's.
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from "node:crypto";
import { isoCBOR } from "@simplewebauthn/server/helpers";

const b64url = (b: Uint8Array | Buffer) => Buffer.from(b).toString("base64url");
const sha256 = (b: Uint8Array | string) => createHash("sha256").update(b).digest();
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};

const FLAG = { up: 0x01, uv: 0x04, be: 0x08, bs: 0x10, at: 0x40 } as const;

export class SoftAuthenticator {
  readonly credentialId = randomBytes(32);
  private readonly privateKey: KeyObject;
  private readonly cose: Uint8Array;
  counter = 0;
  /** the user handle stored at registration (new-api's: the decimal user id) */
  userHandle: string | null = null;
  rpId = "";

  constructor(readonly origin = "http://localhost") {
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    this.privateKey = privateKey;
    const jwk = publicKey.export({ format: "jwk" });
    // COSE_Key: kty EC2 (2), alg ES256 (-7), crv P-256 (1), x, y.
    this.cose = isoCBOR.encode(
      new Map<number, number | Uint8Array>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, Buffer.from(jwk.x!, "base64url")],
        [-3, Buffer.from(jwk.y!, "base64url")],
      ]),
    );
  }

  get id(): string {
    return b64url(this.credentialId);
  }

  private clientData(type: "webauthn.create" | "webauthn.get", challenge: string, origin = this.origin): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }));
  }

  /** navigator.credentials.create() for the options the server's register/begin answered ({publicKey}). */
  register(publicKey: any, opts: { origin?: string } = {}) {
    this.rpId = publicKey.rp.id;
    this.userHandle = Buffer.from(publicKey.user.id, "base64url").toString("utf8");
    const idLen = Buffer.alloc(2);
    idLen.writeUInt16BE(this.credentialId.length);
    const authData = Buffer.concat([
      sha256(this.rpId),
      Buffer.from([FLAG.up | FLAG.uv | FLAG.be | FLAG.at]),
      u32(this.counter),
      Buffer.alloc(16),
      idLen,
      this.credentialId,
      Buffer.from(this.cose),
    ]);
    const attestationObject = isoCBOR.encode(
      new Map<string, unknown>([
        ["fmt", "none"],
        ["attStmt", new Map()],
        ["authData", authData],
      ]) as any,
    );
    return {
      id: this.id,
      rawId: this.id,
      type: "public-key",
      authenticatorAttachment: "platform",
      clientExtensionResults: {},
      response: {
        clientDataJSON: b64url(this.clientData("webauthn.create", publicKey.challenge, opts.origin)),
        attestationObject: b64url(attestationObject),
        transports: ["internal"],
      },
    };
  }

  /** navigator.credentials.get() for the options the server's login/verify begin answered ({publicKey}). */
  assert(publicKey: any, opts: { origin?: string; userHandle?: string | null } = {}) {
    this.counter += 1;
    const authData = Buffer.concat([
      sha256(publicKey.rpId ?? this.rpId),
      Buffer.from([FLAG.up | FLAG.uv | FLAG.be | FLAG.bs]),
      u32(this.counter),
    ]);
    const clientDataJSON = this.clientData("webauthn.get", publicKey.challenge, opts.origin);
    const signature = sign("sha256", Buffer.concat([authData, sha256(clientDataJSON)]), this.privateKey);
    const handle = opts.userHandle === undefined ? this.userHandle : opts.userHandle;
    return {
      id: this.id,
      rawId: this.id,
      type: "public-key",
      authenticatorAttachment: "platform",
      clientExtensionResults: {},
      response: {
        clientDataJSON: b64url(clientDataJSON),
        authenticatorData: b64url(authData),
        signature: b64url(signature),
        userHandle: handle === null ? undefined : b64url(Buffer.from(handle)),
      },
    };
  }
}
