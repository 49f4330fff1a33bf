// STUBBED CHAIN ACCESS — test double, not a blockchain.
//
// The facilitator in facilitator.mjs is the official one (@x402/core's
// x402Facilitator with @x402/evm's ExactEvmScheme). Only its signer, the
// object through which it reads and writes the chain, is replaced here by an
// in-memory USDC ledger, because no chain is reachable from the test. The
// real facilitator code still checks the EIP-712 signature, the recipient,
// the amount, the network and the time window; this stub additionally plays
// the token contract: it recovers the signer against the token's own
// EIP-712 domain (so a wrong extra.name/version fails like on chain), spends
// each (from, nonce) once, and moves balances.
import {
  decodeFunctionData,
  encodeEventTopics,
  encodeFunctionResult,
  getAddress,
  keccak256,
  numberToHex,
  parseAbi,
  recoverTypedDataAddress,
  serializeSignature,
  toHex,
} from "viem";
import { eip3009ABI } from "@x402/evm";

const transferEvent = parseAbi(["event Transfer(address indexed from, address indexed to, uint256 value)"]);

const authorizationTypes = {
  TransferWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
};

/**
 * createStubChain returns a FacilitatorEvmSigner backed by an in-memory
 * ledger of one EIP-3009 token, plus controls and counters for the test.
 */
export function createStubChain({ chainId, asset, name, version, facilitator, balances }) {
  const token = getAddress(asset);
  const ledger = new Map(Object.entries(balances).map(([a, v]) => [getAddress(a), BigInt(v)]));
  const usedNonces = new Set();
  const receipts = new Map();
  const state = { settleMode: "ok", txCount: 0 };

  const key = (from, nonce) => `${getAddress(from)}:${nonce.toLowerCase()}`;
  const balanceOf = (a) => ledger.get(getAddress(a)) ?? 0n;

  // transferCheck does what FiatTokenV2's transferWithAuthorization checks
  // before moving funds, and throws with a revert-like message otherwise.
  async function transferCheck(args) {
    const [from, to, value, validAfter, validBefore, nonce, v, r, s] = args;
    const now = BigInt(Math.floor(Date.now() / 1000));
    if (now <= validAfter) throw new Error("FiatTokenV2: authorization is not yet valid");
    if (now >= validBefore) throw new Error("FiatTokenV2: authorization is expired");
    if (usedNonces.has(key(from, nonce))) throw new Error("FiatTokenV2: authorization is used or canceled");
    const signature = serializeSignature({ r, s, v: BigInt(v) });
    const signer = await recoverTypedDataAddress({
      domain: { name, version, chainId, verifyingContract: token },
      types: authorizationTypes,
      primaryType: "TransferWithAuthorization",
      message: { from, to, value, validAfter, validBefore, nonce },
      signature,
    });
    if (getAddress(signer) !== getAddress(from)) throw new Error("FiatTokenV2: invalid signature");
    if (balanceOf(from) < value) throw new Error("ERC20: transfer amount exceeds balance");
  }

  function view(functionName, args) {
    switch (functionName) {
      case "balanceOf":
        return balanceOf(args[0]);
      case "name":
        return name;
      case "version":
        return version;
      case "authorizationState":
        return usedNonces.has(key(args[0], args[1]));
      default:
        throw new Error(`stub chain: no view ${functionName}`);
    }
  }

  const signer = {
    getAddresses: () => [getAddress(facilitator)],

    async getCode({ address }) {
      return getAddress(address) === token ? "0x60806040" : "0x"; // the token is a contract; everyone else an EOA
    },

    async readContract({ address, functionName, args }) {
      if (functionName === "tryAggregate") {
        return args[1].map(({ target, callData }) => {
          if (getAddress(target) !== token) return { success: false, returnData: "0x" };
          try {
            const call = decodeFunctionData({ abi: eip3009ABI, data: callData });
            const result = view(call.functionName, call.args ?? []);
            return { success: true, returnData: encodeFunctionResult({ abi: eip3009ABI, functionName: call.functionName, result }) };
          } catch {
            return { success: false, returnData: "0x" };
          }
        });
      }
      if (getAddress(address) !== token) throw new Error(`stub chain: no contract at ${address}`);
      if (functionName === "transferWithAuthorization") {
        await transferCheck(args); // eth_call: simulate, change nothing
        return undefined;
      }
      return view(functionName, args ?? []);
    },

    async verifyTypedData() {
      throw new Error("stub chain: verifyTypedData is not expected to be called");
    },

    async writeContract({ address, functionName, args }) {
      if (getAddress(address) !== token || functionName !== "transferWithAuthorization") {
        throw new Error(`stub chain: unexpected write ${functionName} to ${address}`);
      }
      state.txCount++;
      const hash = keccak256(toHex(`stub-tx-${state.txCount}`));
      if (state.settleMode === "revert") {
        receipts.set(hash, { status: "reverted", logs: [] });
        return hash;
      }
      await transferCheck(args);
      const [from, to, value, , , nonce] = args;
      usedNonces.add(key(from, nonce));
      ledger.set(getAddress(from), balanceOf(from) - value);
      ledger.set(getAddress(to), balanceOf(to) + value);
      const topics = encodeEventTopics({ abi: transferEvent, eventName: "Transfer", args: { from, to } });
      receipts.set(hash, {
        status: "success",
        logs: [{ address: token, topics, data: numberToHex(value, { size: 32 }), blockNumber: 1n, logIndex: 0, transactionHash: hash }],
      });
      return hash;
    },

    async sendTransaction() {
      throw new Error("stub chain: sendTransaction is not supported");
    },

    async waitForTransactionReceipt({ hash }) {
      const receipt = receipts.get(hash);
      if (!receipt) throw new Error(`stub chain: unknown transaction ${hash}`);
      return receipt;
    },
  };

  return {
    signer,
    setSettleMode(mode) {
      state.settleMode = mode;
    },
    balance: (a) => balanceOf(a).toString(),
  };
}
