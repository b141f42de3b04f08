fn main() {
    std::process::exit(cuekit::cli::run());
}
