//! Collectives called with a count that one rank gets wrong, under any
//! launch (`grappe run` with threads, processes or both): each scenario
//! runs on a new communicator over all ranks, and every rank prints what
//! it saw (its right data, wrong data, or which error) for the test of
//! `tests/mismatch.rs` to judge.
//!
//!     grappe run -n 5 target/debug/examples/mismatch_check sweep SEED CASES
//!     grappe run -n 5 target/debug/examples/mismatch_check one COLL COUNT ODD_RANK ODD_COUNT ROOT ARENA COMMUTATIVE SEED

mod checks;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    grappe::run(|world| -> Result<(), String> {
        let scenarios = match args.first().map(String::as_str) {
            Some("sweep") => {
                let number = |i: usize| args.get(i).and_then(|a| a.parse::<u64>().ok()).ok_or("sweep SEED CASES");
                checks::sweep(number(1)?, world.size(), number(2)? as usize)
            }
            Some("one") => vec![checks::Scenario::parse(&args[1..])?],
            _ => return Err("usage: mismatch_check sweep SEED CASES | one SCENARIO".into()),
        };
        for (case, scenario) in scenarios.iter().enumerate() {
            println!("{}", checks::run(scenario, world).lines(case));
        }
        Ok(())
    });
}
