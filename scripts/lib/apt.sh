# Helpers for the scripts in scripts/setup.d: install what the project needs from
# Debian's packages when running as root with apt-get, and say what is missing
# otherwise. Sourced, not run.

# Installs the given Debian packages that are not installed yet.
apt_install() {
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    [ "${#missing[@]}" -eq 0 ] && return 0
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "==> installing ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "warning: ${missing[*]} missing and cannot be installed here (needs root and apt-get)" >&2
        return 1
    fi
}

# Installs the packages behind the given `command:package` pairs whose command is missing.
need_tools() {
    local pkgs=()
    for tool in "$@"; do
        command -v "${tool%%:*}" >/dev/null 2>&1 || pkgs+=("${tool#*:}")
    done
    [ "${#pkgs[@]}" -eq 0 ] || apt_install "${pkgs[@]}"
}
