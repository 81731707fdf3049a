# Puts Node.js 24 (LTS) first on PATH for the shell that sources it (`. scripts/use-node-24.sh`):
# the machine's own when it is 24 or newer, otherwise the official build the npm registry serves
# (the node-<platform>-<arch> package), installed once into a per-user cache. CI sources it, so
# every check and test runs on the runtime the image ships.
NODE_24_VERSION=24.21.0
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 24 ]; then
  node_platform=$(uname -s | tr '[:upper:]' '[:lower:]')
  case "$(uname -m)" in
    x86_64 | amd64) node_arch=x64 ;;
    aarch64 | arm64) node_arch=arm64 ;;
    *) node_arch=$(uname -m) ;;
  esac
  node_package="node-${node_platform}-${node_arch}"
  node_home="${XDG_CACHE_HOME:-$HOME/.cache}/banking-graph/node-${NODE_24_VERSION}"
  if [ ! -x "$node_home/node_modules/$node_package/bin/node" ]; then
    echo "Node.js $(node --version 2>/dev/null || echo 'missing') is older than 24: installing Node.js $NODE_24_VERSION from the npm registry into $node_home (once)"
    npm install --prefix "$node_home" --no-save --no-audit --no-fund --no-package-lock "$node_package@$NODE_24_VERSION" >/dev/null
  fi
  export PATH="$node_home/node_modules/$node_package/bin:$PATH"
  hash -r
fi
echo "Node.js $(node --version), npm $(npm --version)"
