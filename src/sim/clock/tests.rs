use super::*;

#[test]
fn joins_and_raises_match_a_dense_clock() {
    // A little pseudo-random walk over many clocks sharing pieces.
    let width = 3000;
    let mut seed = 12345u64;
    let mut next = move |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let mut clocks: Vec<VClock> = vec![VClock::default(); 40];
    let mut dense: Vec<Vec<u32>> = vec![vec![0; width]; 40];
    for step in 0..6_000 {
        let a = next(40) as usize;
        if next(3) == 0 {
            let b = next(40) as usize;
            if next(4) == 0 {
                // Join several at once.
                let c = next(40) as usize;
                let (cb, cc) = (clocks[b].clone(), clocks[c].clone());
                clocks[a].join_all([&cb, &cc]);
                let (db, dc) = (dense[b].clone(), dense[c].clone());
                for (k, e) in dense[a].iter_mut().enumerate() {
                    *e = (*e).max(db[k]).max(dc[k]);
                }
            } else {
                let cb = clocks[b].clone();
                clocks[a].join(&cb);
                let db = dense[b].clone();
                for (e, theirs) in dense[a].iter_mut().zip(db) {
                    *e = (*e).max(theirs);
                }
            }
        } else {
            let i = if next(2) == 0 {
                next(width as u64) as usize
            } else {
                a * 7 + next(7) as usize
            };
            let e = step as u32 / 3 + next(5) as u32;
            clocks[a].raise(i, e);
            dense[a][i] = dense[a][i].max(e);
        }
        if step % 499 == 0 {
            for (c, d) in clocks.iter().zip(&dense) {
                for (k, want) in d.iter().enumerate() {
                    assert_eq!(c.at(k), *want, "step {step} slot {k}");
                }
            }
        }
    }
}

#[test]
fn shared_parts_are_not_copied() {
    let mut base = VClock::default();
    for i in 0..1000 {
        base.raise(i * 3, 5);
    }
    base.compact();
    let mut a = base.clone();
    a.raise(1, 9);
    let mut b = base.clone();
    b.raise(2, 9);
    a.join(&b);
    // a holds base's part once and a few own entries.
    assert!(
        a.bytes() < base.bytes() + 100,
        "{} vs {}",
        a.bytes(),
        base.bytes()
    );
    assert_eq!(a.at(1), 9);
    assert_eq!(a.at(2), 9);
    assert_eq!(a.at(2997), 5);
    assert_eq!(a.at(2998), 0);
}

#[test]
fn relaxed_keeps_only_execution_order() {
    let mut c = Clocks::zero();
    c.set(4, 2);
    let r = c.relaxed();
    assert_eq!(r.data.at(4), 0);
    assert_eq!(r.exec.at(4), 2);
}
